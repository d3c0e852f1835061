#include "policy/plan_cost.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policy/cost/cost_model.h"

namespace smbfleet::policy {

using cost::ProtectionLevel;

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
  out.set_before(before.ToString());
  out.set_after(after.ToString());
  if (after == before) {
    out.set_summary("no change to signing or encryption");
    out.set_throughput_ratio(1.0);
    out.set_cpu_ratio(1.0);
    out.set_known(true);
    return out;
  }
  if (after.effective_algorithm() == smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED) {
    out.set_summary(absl::StrCat("dialect ", smbfleet::v1::Dialect_Name(dialect),
                                 " cannot be protected as planned"));
    return out;
  }
  cost::ChangeCost cc = cost::EstimateChangeCost(p, before, after);
  std::string summary = cc.summary;
  if (!encrypt_all && !encrypted_shares.empty()) {
    absl::StrAppend(&summary, " (traffic on ", absl::StrJoin(encrypted_shares, ", "), " only)");
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
  }
  auto it = cc.host.crypto.find(after.effective_algorithm());
  out.set_known(it != cc.host.crypto.end() && it->second.measured);
  return out;
}

}  // namespace smbfleet::policy
