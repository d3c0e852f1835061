#include "policy/transitions.h"

#include <algorithm>
#include <map>
#include <utility>

namespace smbfleet::policy {

std::vector<smbfleet::v1::StatusTransition> ComputeTransitions(
    absl::Span<const StoredResult> previous, const smbfleet::v1::HostEvaluation& current) {
  using Key = std::pair<std::string, std::string>;
  std::map<Key, const StoredResult*> prev;
  for (const StoredResult& r : previous) prev[{r.rule_id, r.share}] = &r;

  std::vector<smbfleet::v1::StatusTransition> out;
  auto add = [&](const std::string& rule, const std::string& share, const std::string& cls,
                 smbfleet::v1::ComplianceStatus from, smbfleet::v1::ComplianceStatus to) {
    smbfleet::v1::StatusTransition t;
    t.set_hostname(current.hostname());
    t.set_rule_id(rule);
    t.set_share(share);
    t.set_classification(cls);
    t.set_policy_version(current.policy_version());
    t.set_from_status(from);
    t.set_to_status(to);
    *t.mutable_at() = current.evaluated_at();
    out.push_back(std::move(t));
  };
  std::map<Key, bool> now_present;
  for (const auto& r : current.results()) {
    Key k{r.rule_id(), r.share()};
    if (now_present.count(k)) continue;  // one result per key; the first wins
    now_present[k] = true;
    auto it = prev.find(k);
    smbfleet::v1::ComplianceStatus from =
        it == prev.end() ? smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED : it->second->status;
    if (from != r.status()) add(r.rule_id(), r.share(), r.classification(), from, r.status());
  }
  for (const auto& [k, r] : prev) {
    if (now_present.count(k) || r->status == smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED) {
      continue;
    }
    add(k.first, k.second, "", r->status, smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rule_id(), a.share()) < std::tie(b.rule_id(), b.share());
  });
  return out;
}

}  // namespace smbfleet::policy
