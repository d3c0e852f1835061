#include "collector/changes/approval_payload.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/approval_signing.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;

std::vector<v1::HostOrder> ApprovalHostsOf(const v1::Change& change) {
  std::vector<v1::HostOrder> hosts;
  hosts.reserve(static_cast<size_t>(change.hosts_size()));
  for (const auto& h : change.hosts()) {
    v1::HostOrder& host = hosts.emplace_back();
    host.set_host(absl::AsciiStrToLower(h.host()));
    for (const auto& s : h.steps()) {
      v1::SettingChange* c = host.add_settings();
      c->set_setting(s.setting());
      c->set_share(s.share());
      c->set_expected_current(s.expected_current());
      c->set_value(s.value());
      c->set_rollback_value(s.rollback_value());
    }
  }
  return hosts;
}

absl::StatusOr<ApprovalHostTree> ApprovalTreeOf(const v1::Change& change) {
  absl::StatusOr<ApprovalHostTree> tree = ApprovalHostTree::Build(ApprovalHostsOf(change));
  if (!tree.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", change.id(), ": ", tree.status().message()));
  }
  return tree;
}

bool SignedAsV1(const v1::Change& change) {
  if (change.approval_payload().empty()) return false;
  v1::ApprovalPayload stored;
  return stored.ParseFromString(change.approval_payload()) && stored.format() == kApprovalFormatV1;
}

absl::StatusOr<v1::ApprovalPayload> ApprovalPayloadOf(const v1::Change& change) {
  if (change.approval_nonce().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("change ", change.id(),
                     " has no approval nonce (it was proposed before approvals were signed); "
                     "propose it again"));
  }
  if (!change.has_not_after()) {
    return absl::InvalidArgumentError(absl::StrCat("change ", change.id(), " has no not-after"));
  }
  v1::ApprovalPayload p;
  p.set_change_id(change.id());
  p.set_version(change.version());
  p.set_nonce(change.approval_nonce());
  *p.mutable_not_after() = change.not_after();
  p.set_proposed_by(change.proposed_by());
  p.set_approvals_required(change.approvals_required());
  p.set_rollback_of(change.rollback_of());
  p.set_content_hash(change.content_hash());
  if (SignedAsV1(change)) {
    p.set_format(std::string(kApprovalFormatV1));
    for (v1::HostOrder& h : ApprovalHostsOf(change)) *p.add_hosts() = std::move(h);
    return p;
  }
  ASSIGN_OR_RETURN(ApprovalHostTree tree, ApprovalTreeOf(change));
  p.set_format(std::string(kApprovalFormatV2));
  p.set_hosts_root(tree.root());
  p.set_host_count(static_cast<uint32_t>(tree.size()));
  return p;
}

absl::StatusOr<std::string> ApprovalPayloadBytes(const v1::Change& change) {
  ASSIGN_OR_RETURN(v1::ApprovalPayload payload, ApprovalPayloadOf(change));
  return CanonicalApprovalPayload(std::move(payload));
}

}  // namespace smbfleet::collector::changes
