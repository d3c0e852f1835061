#include "policy/plan_cost.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
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
  std::vector<std::string> others;  // shares switched the other way by the same plan
  Compressibility data;             // of the traffic whose compression changes
};

// Share steps change the traffic of those shares only. A plan may switch some shares on (WAN,
// compressible) and others off (incompressible): the ones switched on are priced, since that is
// where the gain and the CPU are, and the others are named.
CompressionChange ShareCompressionChange(const smbfleet::v1::Posture& p,
                                         const std::vector<smbfleet::v1::PlanStep>& steps) {
  std::vector<const smbfleet::v1::Share*> on, off;
  for (const auto& s : steps) {
    if (s.setting() != "share.compressData") continue;
    for (const auto& share : p.shares()) {
      if (share.name() != s.share() || share.compress_data() == (s.value() == "true")) continue;
      (s.value() == "true" ? on : off).push_back(&share);
    }
  }
  CompressionChange out;
  if (on.empty() && off.empty()) return out;
  const auto& priced = on.empty() ? off : on;
  out.before = on.empty();
  out.after = !on.empty();
  for (const auto* share : on.empty() ? on : off) out.others.push_back(share->name());
  double sum = 0;
  int known = 0;
  bool one_corpus = true;  // every known ratio from one benchmark corpus (e.g. label data)
  for (const auto* share : priced) {
    out.shares.push_back(share->name());
    Compressibility c = ShareCompressibility(p, *share, share->classification());
    if (c.ratio > 0) {
      one_corpus = one_corpus && !c.corpus.empty() && (known == 0 || c.corpus == out.data.corpus);
      if (known == 0) out.data = c;
      sum += c.ratio;
      ++known;
    } else if (known == 0 && out.data.source.empty()) {
      out.data.source = absl::StrCat(share->name(), ": ", absl::StripPrefix(c.source, "unknown: "));
    }
  }
  if (known > 1 && !one_corpus) {
    out.data.ratio = sum / known;
    out.data.corpus.clear();
    out.data.source = absl::StrCat("mean of ", known, " shares");
  }
  return out;
}

CompressionChange CompressionChangeOf(const smbfleet::v1::Posture& p,
                                      const std::vector<smbfleet::v1::PlanStep>& steps) {
  const bool server_on = p.server().request_compression();
  for (const auto& s : steps) {
    if (s.setting() == "server.requestCompression") {
      CompressionChange out;
      out.before = server_on;
      out.after = s.value() == "true";
      out.data = HostCompressibility(p);
      return out;
    }
  }
  if (server_on) return {};  // every share is compressed whatever its own flag says
  return ShareCompressionChange(p, steps);
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
  std::string compression_unknown;  // why compression could not be priced
  if (compression_changes) {
    out.set_compression_ratio(compression.data.ratio);
    out.set_compression_ratio_source(compression.data.source);
    cost::CompressionCost figures;
    if (compression.data.ratio > 0) {
      figures = compression.data.corpus.empty()
                    ? cost::CompressionCostForRatio(host, compression.data.ratio, parameters)
                    : cost::CompressionCostFor(host, compression.data.corpus, parameters);
    }
    if (!(compression.data.ratio > 0)) {
      compression_unknown = absl::StrCat(
          "no compression ratio (", absl::StripPrefix(compression.data.source, "unknown: "), ")");
    } else if (!(figures.compress_seconds_per_byte > 0)) {
      compression_unknown = "no compression benchmark";
    } else {
      figures.ratio = compression.data.ratio;
      compression_measured = figures.measured;
      CompressionLevel level =
          CompressionLevel::On(compression.data.ratio, figures, compression.data.source);
      (compression.before ? compression_before : compression_after) = level;
    }
  }
  if (!compression_unknown.empty() && after == before) {
    out.set_summary(absl::StrCat(compression.after ? "enabling" : "disabling",
                                 " compression: cost unknown, ", compression_unknown));
    return out;
  }
  cost::ChangeCost cc = cost::EstimateChangeCost(host, before, compression_before, after,
                                                 compression_after, parameters);
  std::string summary = cc.summary;
  if (!encrypt_all && !encrypted_shares.empty()) {
    absl::StrAppend(&summary, " (traffic on ", absl::StrJoin(encrypted_shares, ", "), " only)");
  }
  if (!compression_unknown.empty()) {
    absl::StrAppend(&summary, "; ", compression.after ? "enabling" : "disabling",
                    " compression: cost unknown, ", compression_unknown);
  } else if (compression_changes && !compression.shares.empty()) {
    absl::StrAppend(
        &summary, " (compression of traffic on ", absl::StrJoin(compression.shares, ", "), " only",
        compression.others.empty() ? ""
                                   : absl::StrCat("; ", compression.after ? "off" : "on", " for ",
                                                  absl::StrJoin(compression.others, ", ")),
        ")");
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
  out.set_known(protection_measured && compression_measured && compression_unknown.empty());
  return out;
}

}  // namespace smbfleet::policy
