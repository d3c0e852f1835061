#include "collector/changes/approval_payload.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/approval_signing.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;

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
  for (const auto& h : change.hosts()) {
    v1::HostOrder* host = p.add_hosts();
    host->set_host(absl::AsciiStrToLower(h.host()));
    for (const auto& s : h.steps()) {
      v1::SettingChange* c = host->add_settings();
      c->set_setting(s.setting());
      c->set_share(s.share());
      c->set_expected_current(s.expected_current());
      c->set_value(s.value());
      c->set_rollback_value(s.rollback_value());
    }
  }
  p.set_content_hash(change.content_hash());
  return p;
}

absl::StatusOr<std::string> ApprovalPayloadBytes(const v1::Change& change) {
  ASSIGN_OR_RETURN(v1::ApprovalPayload payload, ApprovalPayloadOf(change));
  return CanonicalApprovalPayload(std::move(payload));
}

}  // namespace smbfleet::collector::changes
