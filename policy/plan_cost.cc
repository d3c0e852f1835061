#include "policy/plan_cost.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policy/compressibility.h"
#include "policy/cost/cost_model.h"

namespace smbfleet::policy {
namespace {

using cost::CompressionLevel;
using cost::ProtectionLevel;

// What the plan does to compression: turn it on (or off) server-wide, or on (off) for shares.
struct CompressionChange {
  bool before = false;
  bool after = false;
  std::vector<std::string> shares;  // empty: the server's setting
  Compressibility data;             // of the traffic whose compression changes
};

CompressionChange CompressionChangeOf(const smbfleet::v1::Posture& p,
                                      const std::vector<smbfleet::v1::PlanStep>& steps) {
  CompressionChange out;
  const bool server_on = p.server().request_compression();
  out.before = out.after = server_on;
  for (const auto& s : steps) {
    if (s.setting() == "server.requestCompression") {
      out.after = s.value() == "true";
      out.shares.clear();
      out.data = HostCompressibility(p);
      return out;
    }
  }
  // Share steps: only the traffic of those shares changes.
  double sum = 0;
  int known = 0;
  std::string unknown;
  for (const auto& s : steps) {
    if (s.setting() != "share.compressData") continue;
    for (const auto& share : p.shares()) {
      if (share.name() != s.share()) continue;
      bool was = server_on || share.compress_data();
      bool will = server_on || s.value() == "true";
      if (was == will) continue;
      out.before = was;
      out.after = will;
      out.shares.push_back(share.name());
      Compressibility c = ShareCompressibility(p, share, share.classification());
      if (c.ratio > 0) {
        sum += c.ratio;
        ++known;
        if (out.data.corpus.empty() && out.data.source.empty()) out.data = c;
      } else if (unknown.empty()) {
        unknown = absl::StrCat(share.name(), ": ", c.source);
      }
    }
  }
  if (!unknown.empty() && known == 0) {
    out.data = {};
    out.data.source = unknown;
  } else if (known > 1) {
    out.data.ratio = sum / known;
    out.data.corpus.clear();
    out.data.source = absl::StrCat("mean of ", known, " shares");
  }
  return out;
}

}  // namespace

smbfleet::v1::PredictedCost PredictPlanCost(const smbfleet::v1::Posture& p,
                                            const std::vector<smbfleet::v1::PlanStep>& steps) {
  smbfleet::v1::PredictedCost out;
  smbfleet::v1::Dialect dialect = cost::TypicalDialect(p);
  auto signing = [&] { return ProtectionLevel::Signing(cost::SigningAlgorithmFor(dialect, p)); };
  auto encryption = [&] { return ProtectionLevel::Encryption(cost::CipherFor(dialect, p)); };

  ProtectionLevel before = ProtectionLevel::None();
  if (p.server().encrypt_data()) {
    before = encryption();
  } else if (p.server().require_signing()) {
    before = signing();
  }
  ProtectionLevel after = before;
  std::vector<std::string> encrypted_shares;
  bool encrypt_all = false, sign = false;
  for (const auto& s : steps) {
    if (s.value() != "true") continue;
    if (s.setting() == "server.encryptData") encrypt_all = true;
    if (s.setting() == "share.encryptData") encrypted_shares.push_back(s.share());
    if (s.setting() == "server.requireSigning") sign = true;
  }
  if ((encrypt_all || !encrypted_shares.empty()) && !before.is_encrypted()) {
    after = encryption();
  } else if (sign && !before.is_signed() && !before.is_encrypted()) {
    after = signing();
  }
  const CompressionChange compression = CompressionChangeOf(p, steps);
  const bool compression_changes = compression.before != compression.after;
  out.set_before(before.ToString());
  out.set_after(after.ToString());
  if (after == before && !compression_changes) {
    out.set_summary("no change to signing or encryption");
    out.set_throughput_ratio(1.0);
    out.set_cpu_ratio(1.0);
    out.set_known(true);
    return out;
  }
  if (!(after == before) &&
      after.effective_algorithm() == smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED) {
    out.set_summary(absl::StrCat("dialect ", smbfleet::v1::Dialect_Name(dialect),
                                 " cannot be protected as planned"));
    return out;
  }

  cost::HostProfile host = cost::ProfileFromPosture(p);
  const cost::ModelParameters& parameters = cost::DefaultParameters();
  CompressionLevel compression_before = CompressionLevel::None();
  CompressionLevel compression_after = CompressionLevel::None();
  bool compression_measured = true;
  if (compression_changes) {
    out.set_compression_ratio(compression.data.ratio);
    out.set_compression_ratio_source(compression.data.source);
    if (!(compression.data.ratio > 0)) {
      out.set_summary(absl::StrCat(compression.after ? "enabling" : "disabling",
                                   " compression: cost unknown, the data's compression ratio is ",
                                   compression.data.source));
      return out;
    }
    cost::CompressionCost figures =
        compression.data.corpus.empty()
            ? cost::CompressionCostForRatio(host, compression.data.ratio, parameters)
            : cost::CompressionCostFor(host, compression.data.corpus, parameters);
    if (!(figures.compress_seconds_per_byte > 0)) {
      out.set_summary("compression: cost unknown, no compression benchmark");
      return out;
    }
    figures.ratio = compression.data.ratio;
    compression_measured = figures.measured;
    CompressionLevel on =
        CompressionLevel::On(compression.data.ratio, figures, compression.data.source);
    (compression.before ? compression_before : compression_after) = on;
  }
  cost::ChangeCost cc = cost::EstimateChangeCost(host, before, compression_before, after,
                                                 compression_after, parameters);
  std::string summary = cc.summary;
  if (!encrypt_all && !encrypted_shares.empty()) {
    absl::StrAppend(&summary, " (traffic on ", absl::StrJoin(encrypted_shares, ", "), " only)");
  }
  if (compression_changes && !compression.shares.empty()) {
    absl::StrAppend(&summary, " (compression of traffic on ",
                    absl::StrJoin(compression.shares, ", "), " only)");
  }
  out.set_summary(summary);
  if (!cc.workloads.empty()) {
    const auto& w = cc.workloads.front();
    if (w.before.throughput_bytes_per_second > 0) {
      out.set_throughput_ratio(w.after.throughput_bytes_per_second /
                               w.before.throughput_bytes_per_second);
    }
    if (w.before.server_cpu_seconds_per_byte > 0) {
      out.set_cpu_ratio(w.after.server_cpu_seconds_per_byte / w.before.server_cpu_seconds_per_byte);
    }
    out.set_cpu_change_points(w.cpu_change_points);
  }
  bool protection_measured = true;
  if (!(after == before)) {
    auto it = cc.host.crypto.find(after.effective_algorithm());
    protection_measured = it != cc.host.crypto.end() && it->second.measured;
  }
  out.set_known(protection_measured && compression_measured);
  return out;
}

}  // namespace smbfleet::policy
