// Waivers through the change workflow's door: requested by a proposer, approved by a different
// approver, revoked by an approver or admin; every step in the audit log.

#include "absl/strings/str_cat.h"
#include "collector/changes/change_service.h"
#include "collector/ingest/digest.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;

namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromTs(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

// What a waiver waives, hashed for the audit log.
std::string WaiverHash(const v1::Waiver& w) {
  std::string canonical;
  for (const std::string* f : {&w.id(), &w.rule_id(), &w.host(), &w.label_key(), &w.label_value(),
                               &w.share(), &w.justification(), &w.ticket()}) {
    absl::StrAppend(&canonical, f->size(), ":", *f, ";");
  }
  absl::StrAppend(&canonical, TimeUtil::ToString(w.expires_at()));
  return Sha256Hex(canonical);
}

v1::AuditEntry WaiverEntry(const std::string& actor, const std::string& action, const v1::Waiver& w,
                           const std::string& reason, absl::Time now) {
  v1::AuditEntry e;
  e.set_actor(actor);
  e.set_action(action);
  e.set_waiver_id(w.id());
  e.set_host(w.host());
  e.set_reason(reason);
  e.set_content_hash(WaiverHash(w));
  e.set_detail(absl::StrCat("rule ", w.rule_id()));
  *e.mutable_at() = Ts(now);
  return e;
}

absl::Status NeedRole(const Actor& actor, std::initializer_list<Role> roles,
                      const std::string& what) {
  for (Role r : roles) {
    if (actor.role == r) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(actor.name, " is ", RoleName(actor.role), ": cannot ", what));
}

std::string StateName(v1::WaiverState s) {
  return v1::WaiverState_Name(s).substr(sizeof("WAIVER_STATE_") - 1);
}

}  // namespace

absl::StatusOr<v1::Waiver> ChangeService::RequestWaiver(const Actor& actor,
                                                        const v1::Waiver& request) {
  RETURN_IF_ERROR(NeedRole(actor, {Role::kProposer, Role::kAdmin}, "request a waiver"));
  const absl::Time now = clock_();
  if (request.rule_id().empty()) return absl::InvalidArgumentError("waiver.rule_id: required");
  if (policy_ != nullptr && request.rule_id() != "*") {
    bool known = false;
    for (const auto& r : policy_->rules) known = known || r.id == request.rule_id();
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("waiver.rule_id: '",
                                                     request.rule_id().substr(0, 64),
                                                     "' is not a rule of policy ", policy_->name));
    }
  }
  const bool by_host = !request.host().empty();
  const bool by_label = !request.label_key().empty() || !request.label_value().empty();
  const bool by_share = !request.share().empty();
  if (by_label && (request.label_key().empty() || request.label_value().empty())) {
    return absl::InvalidArgumentError("waiver.label_key, label_value: give both");
  }
  if ((by_host && by_label) || (by_label && by_share) || (!by_host && !by_label && !by_share)) {
    return absl::InvalidArgumentError(
        "waiver scope: exactly one of host, label (key and value) or share (optionally with "
        "host)");
  }
  if (request.justification().empty()) {
    return absl::InvalidArgumentError("waiver.justification: required");
  }
  if (request.ticket().empty()) return absl::InvalidArgumentError("waiver.ticket: required");
  if (!request.has_expires_at() || FromTs(request.expires_at()) <= now) {
    return absl::InvalidArgumentError(
        absl::StrCat("waiver.expires_at: required and in the future, got ",
                     request.has_expires_at() ? TimeUtil::ToString(request.expires_at()) : "none"));
  }
  v1::Waiver w;
  w.set_id(NewChangeId());
  w.set_rule_id(request.rule_id());
  w.set_host(request.host());
  w.set_label_key(request.label_key());
  w.set_label_value(request.label_value());
  w.set_share(request.share());
  w.set_justification(request.justification().substr(0, 2000));
  w.set_ticket(request.ticket().substr(0, 200));
  *w.mutable_expires_at() = request.expires_at();
  *w.mutable_created_at() = Ts(now);
  w.set_created_by(actor.name);
  w.set_state(v1::WAIVER_STATE_REQUESTED);
  RETURN_IF_ERROR(changes_->CreateWaiver(
      w, WaiverEntry(actor.name, "waiver_requested", w, w.justification(), now)));
  return w;
}

absl::StatusOr<v1::Waiver> ChangeService::ApproveWaiver(const Actor& actor, const std::string& id,
                                                        const std::string& comment) {
  RETURN_IF_ERROR(NeedRole(actor, {Role::kApprover}, "approve a waiver"));
  const absl::Time now = clock_();
  return changes_->UpdateWaiver(
      id, [&](const v1::Waiver& current) -> absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>> {
        if (current.state() != v1::WAIVER_STATE_REQUESTED) {
          return absl::FailedPreconditionError(
              absl::StrCat("waiver ", id, " is ", StateName(current.state()), ", not REQUESTED"));
        }
        if (current.created_by() == actor.name) {
          return absl::FailedPreconditionError(absl::StrCat(
              "waiver ", id, ": ", actor.name,
              " requested it and cannot approve it (four-eyes: another approver must)"));
        }
        if (FromTs(current.expires_at()) <= now) {
          return absl::FailedPreconditionError(absl::StrCat(
              "waiver ", id, " expired at ", TimeUtil::ToString(current.expires_at())));
        }
        v1::Waiver next = current;
        next.set_state(v1::WAIVER_STATE_APPROVED);
        next.set_approved_by(actor.name);
        *next.mutable_approved_at() = Ts(now);
        return std::make_pair(next, WaiverEntry(actor.name, "waiver_approved", next, comment, now));
      });
}

absl::StatusOr<v1::Waiver> ChangeService::RevokeWaiver(const Actor& actor, const std::string& id,
                                                       const std::string& reason) {
  RETURN_IF_ERROR(NeedRole(actor, {Role::kApprover, Role::kAdmin}, "revoke a waiver"));
  if (reason.empty()) return absl::InvalidArgumentError("reason: required to revoke a waiver");
  const absl::Time now = clock_();
  return changes_->UpdateWaiver(
      id, [&](const v1::Waiver& current) -> absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>> {
        if (current.state() != v1::WAIVER_STATE_REQUESTED &&
            current.state() != v1::WAIVER_STATE_APPROVED) {
          return absl::FailedPreconditionError(
              absl::StrCat("waiver ", id, " is ", StateName(current.state()), ": cannot revoke"));
        }
        v1::Waiver next = current;
        next.set_state(v1::WAIVER_STATE_REVOKED);
        next.set_revoked_by(actor.name);
        *next.mutable_revoked_at() = Ts(now);
        next.set_revoke_reason(reason.substr(0, 2000));
        return std::make_pair(next, WaiverEntry(actor.name, "waiver_revoked", next, reason, now));
      });
}

}  // namespace smbfleet::collector::changes
