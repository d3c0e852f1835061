#include "collector/changes/change_service.h"

#include <openssl/rand.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "collector/changes/approval_payload.h"
#include "collector/changes/change_rollout.h"
#include "collector/changes/rollout.h"
#include "collector/changes/stale_plan.h"
#include "collector/ingest/digest.h"
#include "common/approval_signing.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

namespace {

constexpr char kCollector[] = "collector";
constexpr size_t kHostsNamedInAudit = 20;

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    // Identifiers must not repeat; without the CSPRNG there is nothing safe to fall back to.
    Log()->critical("RAND_bytes failed");
    std::abort();
  }
  return absl::BytesToHexString(raw);
}

// The change's hosts by name (the first of a name, as FindHost finds it), for steps that look
// up many hosts: one FindHost each would be quadratic in the hosts.
std::map<absl::string_view, v1::ChangeHost*> HostsByName(v1::Change& change) {
  std::map<absl::string_view, v1::ChangeHost*> out;
  for (auto& h : *change.mutable_hosts()) out.try_emplace(h.host(), &h);
  return out;
}

v1::ChangeHost* Lookup(const std::map<absl::string_view, v1::ChangeHost*>& hosts,
                       absl::string_view host) {
  auto it = hosts.find(host);
  return it == hosts.end() ? nullptr : it->second;
}

const v1::ChangeHost* FindHost(const v1::Change& change, const std::string& host) {
  for (const auto& h : change.hosts()) {
    if (h.host() == host) return &h;
  }
  return nullptr;
}

v1::AuditEntry Entry(const std::string& actor, const std::string& action,
                     const std::string& change_id, const std::string& reason = "",
                     const std::string& detail = "") {
  v1::AuditEntry e;
  e.set_actor(actor);
  e.set_action(action);
  e.set_change_id(change_id);
  e.set_reason(reason);
  e.set_detail(detail);
  return e;
}

std::string HostList(const std::vector<std::string>& hosts) {
  if (hosts.size() <= kHostsNamedInAudit) return absl::StrJoin(hosts, ", ");
  return absl::StrCat(absl::StrJoin(hosts.begin(), hosts.begin() + kHostsNamedInAudit, ", "),
                      " and ", hosts.size() - kHostsNamedInAudit, " more");
}

// The agent's ack result as the host state of the same name.
absl::StatusOr<v1::HostChangeState> ResultState(v1::AckChangeRequest::Result result) {
  const std::string name = v1::AckChangeRequest::Result_Name(result);
  v1::HostChangeState state = v1::HOST_CHANGE_STATE_UNSPECIFIED;
  if (result == v1::AckChangeRequest::RESULT_UNSPECIFIED ||
      !v1::HostChangeState_Parse(absl::StrCat("HOST_CHANGE_STATE_", name.substr(7)), &state)) {
    return absl::InvalidArgumentError(
        absl::StrCat("result: ", static_cast<int>(result), " is not an ack result"));
  }
  return state;
}

// The steps that restore what an applied host had: its ack's journaled before-values (the
// plan's rollback values when the ack carried none).
std::vector<v1::PlanStep> RollbackSteps(const v1::ChangeHost& applied) {
  std::vector<v1::PlanStep> steps;
  auto after_value = [&](const std::string& setting, const std::string& share) {
    for (const auto& a : applied.after()) {
      if (a.setting() == setting && a.share() == share) return a.value();
    }
    for (const auto& s : applied.steps()) {
      if (s.setting() == setting && s.share() == share) return s.value();
    }
    return std::string();
  };
  if (!applied.before().empty()) {
    for (const auto& b : applied.before()) {
      v1::PlanStep s;
      s.set_setting(b.setting());
      s.set_share(b.share());
      s.set_value(b.value().empty() ? b.expected_current() : b.value());
      s.set_expected_current(after_value(b.setting(), b.share()));
      s.set_rollback_value(s.expected_current());
      s.set_reason("rollback: the value journaled before the change");
      steps.push_back(std::move(s));
    }
  } else {
    for (auto it = applied.steps().rbegin(); it != applied.steps().rend(); ++it) {
      if (it->rollback_value().empty()) continue;
      v1::PlanStep s;
      s.set_setting(it->setting());
      s.set_share(it->share());
      s.set_value(it->rollback_value());
      s.set_expected_current(it->value());
      s.set_rollback_value(it->value());
      s.set_reason("rollback: the plan's rollback value (the ack journaled none)");
      steps.push_back(std::move(s));
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) steps[i].set_order(static_cast<uint32_t>(i + 1));
  return steps;
}

}  // namespace

struct ChangeService::Prepared {
  std::vector<Event> events;          // stepped in this order
  std::vector<v1::AuditEntry> audit;  // besides what the actions audit
  bool skip = false;                  // nothing changes (e.g. the same ack again)
  bool person = true;                 // a person's step: actions are audited as theirs
};

std::string NewChangeId() {
  std::string h = RandomHex(16);
  h[12] = '4';                                                  // version 4
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return absl::StrCat(h.substr(0, 8), "-", h.substr(8, 4), "-", h.substr(12, 4), "-",
                      h.substr(16, 4), "-", h.substr(20));
}

std::string NewNonce() { return RandomHex(16); }

std::string ContentHash(const v1::Change& change) {
  std::vector<const v1::ChangeHost*> hosts;
  for (const auto& h : change.hosts()) hosts.push_back(&h);
  std::sort(hosts.begin(), hosts.end(),
            [](const v1::ChangeHost* a, const v1::ChangeHost* b) { return a->host() < b->host(); });
  // Length-prefixed fields: no value can fake a separator.
  std::string canonical;
  auto field = [&](const std::string& s) { absl::StrAppend(&canonical, s.size(), ":", s, ";"); };
  field(change.rollback_of());
  for (const v1::ChangeHost* h : hosts) {
    field(h->host());
    for (const auto& s : h->steps()) {
      field(s.setting());
      field(s.share());
      field(s.expected_current());
      field(s.value());
      field(s.rollback_value());
    }
    canonical += "\n";
  }
  return Sha256Hex(canonical);
}

v1::ChangeOrder OrderFor(const v1::Change& change, const std::string& host,
                         const ApprovalHostTree* tree) {
  v1::ChangeOrder order;
  order.set_change_id(change.id());
  order.set_version(change.version());
  order.set_rollback_of(change.rollback_of());
  order.set_reason(change.reason());
  const v1::ChangeHost* h = FindHost(change, host);
  if (h == nullptr) return order;
  order.set_nonce(h->nonce());
  *order.mutable_not_after() = h->order_not_after();
  for (const auto& s : h->steps()) {
    auto* c = order.add_settings();
    c->set_setting(s.setting());
    c->set_share(s.share());
    c->set_expected_current(s.expected_current());
    c->set_value(s.value());
    c->set_rollback_value(s.rollback_value());
  }
  // Exactly the bytes the approvers signed. A change stored without them has no valid order;
  // the agent refuses it.
  order.set_approval_payload(change.approval_payload());
  if (tree != nullptr) {
    if (std::optional<size_t> index = tree->IndexOf(absl::AsciiStrToLower(host)); index) {
      order.set_host_order(tree->CanonicalAt(*index));
      order.set_host_index(static_cast<uint32_t>(*index));
      for (std::string& hash : tree->ProofAt(*index)) order.add_host_proof(std::move(hash));
    }
  }
  for (const auto& a : change.approvals()) {
    if (a.signature().empty()) continue;
    v1::OrderSignature* sig = order.add_signatures();
    sig->set_approver(a.approver());
    sig->set_key_id(a.key_id());
    sig->set_signature(a.signature());
  }
  return order;
}

ChangeService::ChangeService(ChangeStore* changes, HostStore* hosts, ComplianceStore* compliance,
                             const policy::Policy* policy, ChangeOptions options, Clock clock)
    : changes_(changes),
      hosts_(hosts),
      compliance_(compliance),
      policy_(policy),
      options_(std::move(options)),
      clock_(std::move(clock)) {}

// Inside one UpdateChange: `prepare` edits the change (an approval, an ack's values) and names
// the events; each event goes through the rollout state machine (RolloutFromChange -> Step ->
// ApplyRollout) and its actions are carried out on the change itself (nonces and order times
// for dispatches, a linked rollback change, audit rows). After the commit the hosts with new
// orders are signalled.
absl::StatusOr<ChangeService::StepResult> ChangeService::RunStep(const std::string& id,
                                                                 const std::string& actor,
                                                                 const std::string& reason,
                                                                 const Prepare& prepare) {
  const absl::Time now = clock_();
  std::optional<v1::Change> created;
  std::vector<std::string> dispatched;
  auto step = [&](const v1::Change& current) -> absl::StatusOr<ChangeUpdate> {
    created.reset();  // a store may run the step again (a retried transaction)
    dispatched.clear();
    ChangeUpdate u;
    u.change = current;
    v1::Change& c = u.change;
    ASSIGN_OR_RETURN(Prepared p, prepare(c));
    if (p.skip) return u;
    const std::string& action_actor = p.person ? actor : std::string(kCollector);
    std::vector<std::string> rollback_hosts;
    std::string rollback_reason;
    for (const Event& event : p.events) {
      ASSIGN_OR_RETURN(Rollout rollout, RolloutFromChange(c, options_.ack_timeout));
      std::map<std::string, v1::HostChangeState> before;
      for (const auto& h : c.hosts()) before[h.host()] = h.state();
      ASSIGN_OR_RETURN(Transition t, Step(std::move(rollout), event, now));
      ApplyRollout(t.rollout, &c);
      for (const auto& h : c.hosts()) {
        if (h.state() == v1::HOST_CHANGE_STATE_TIMED_OUT &&
            before[h.host()] != v1::HOST_CHANGE_STATE_TIMED_OUT) {
          auto e = Entry(kCollector, "timed_out", c.id(), h.message());
          e.set_host(h.host());
          u.audit.push_back(std::move(e));
        }
      }
      for (const Action& a : t.actions) {
        switch (a.kind) {
          case Action::Kind::kDispatch: {
            const std::map<absl::string_view, v1::ChangeHost*> by_name = HostsByName(c);
            for (const std::string& host : a.hosts) {
              v1::ChangeHost* h = Lookup(by_name, host);
              if (h == nullptr) continue;
              h->set_nonce(NewNonce());
              *h->mutable_order_not_after() = Ts(a.not_after);
              dispatched.push_back(host);
            }
            u.audit.push_back(Entry(action_actor, "dispatched", c.id(), "",
                                    absl::StrCat("wave ", a.wave + 1, " of ", c.wave_count(), ": ",
                                                 HostList(a.hosts))));
            break;
          }
          case Action::Kind::kHalt:
            u.audit.push_back(Entry(action_actor, "halted", c.id(), a.reason));
            break;
          case Action::Kind::kSendRollback:
            rollback_hosts.insert(rollback_hosts.end(), a.hosts.begin(), a.hosts.end());
            rollback_reason = a.reason;
            break;
          case Action::Kind::kComplete:
            u.audit.push_back(Entry(kCollector, "completed", c.id()));
            break;
          case Action::Kind::kExpire:
            u.audit.push_back(Entry(kCollector, "expired", c.id(), a.reason));
            break;
        }
      }
    }
    // The person's (or host's) row first, then what the state machine did about it.
    u.audit.insert(u.audit.begin(), p.audit.begin(), p.audit.end());
    if (!rollback_hosts.empty()) {
      // A linked change that restores the journaled before-values. It is signed like any
      // change: PROPOSED here, dispatched once its approvers signed it. The original proposer
      // stays the proposer (their signature never counts); the person who asked for it is
      // requested_by.
      v1::Change rb;
      rb.set_id(NewChangeId());
      rb.set_state(v1::CHANGE_STATE_PROPOSED);
      rb.set_version(1);
      rb.set_source(v1::CHANGE_SOURCE_ROLLBACK);
      rb.set_rollback_of(c.id());
      rb.set_reason(rollback_reason.empty() ? absl::StrCat("rollback of change ", c.id())
                                            : rollback_reason);
      rb.set_proposed_by(c.proposed_by());
      rb.set_requested_by(action_actor);
      rb.set_approval_nonce(NewNonce());
      *rb.mutable_proposed_at() = Ts(now);
      *rb.mutable_updated_at() = Ts(now);
      *rb.mutable_not_after() = Ts(now + options_.lifetime);
      rb.set_policy_name(c.policy_name());
      rb.set_policy_version(c.policy_version());
      const std::map<absl::string_view, v1::ChangeHost*> by_name = HostsByName(c);
      for (const std::string& host : rollback_hosts) {
        const v1::ChangeHost* applied = Lookup(by_name, host);
        if (applied == nullptr) continue;
        v1::ChangeHost* h = rb.add_hosts();
        h->set_host(host);
        *h->mutable_labels() = applied->labels();
        for (auto& s : RollbackSteps(*applied)) *h->add_steps() = std::move(s);
        h->set_state(v1::HOST_CHANGE_STATE_PENDING);
        h->set_wave(-1);
      }
      rb.mutable_impact()->set_hosts(static_cast<uint32_t>(rb.hosts_size()));
      rb.set_approvals_required(
          static_cast<uint32_t>(RequiredApprovals(FactsOf(rb), options_.approval)));
      rb.set_content_hash(ContentHash(rb));
      c.set_rolled_back_by(rb.id());
      auto e = Entry(action_actor, "proposed", rb.id(), rb.reason(),
                     absl::StrCat("rollback of ", c.id(), ": ", HostList(rollback_hosts), "; ",
                                  rb.approvals_required(), " approvals required"));
      e.set_content_hash(rb.content_hash());
      u.audit.push_back(std::move(e));
      created = rb;
      u.created = std::move(rb);
    }
    *c.mutable_updated_at() = Ts(now);
    for (auto& e : u.audit) {
      if (e.content_hash().empty() && e.change_id() == c.id()) e.set_content_hash(c.content_hash());
      if (e.reason().empty() && e.actor() == actor && p.person) e.set_reason(reason);
      *e.mutable_at() = Ts(now);
    }
    return u;
  };
  ASSIGN_OR_RETURN(v1::Change written, changes_->UpdateChange(id, step));
  // Committed: wake whichever collector holds these hosts' streams. The store is the truth
  // (PendingForHost), so a signal costs a lookup and a lost one only a delay.
  if (signal_ != nullptr && !dispatched.empty()) signal_->HostsHaveOrders(dispatched);
  return StepResult{std::move(written), std::move(created)};
}

absl::StatusOr<v1::ApproveChangeResponse> ChangeService::Approve(
    const Actor& actor, const v1::ApproveChangeRequest& request) {
  ASSIGN_OR_RETURN(RolloutSpec spec, ParseRolloutOptions(request.rollout(), options_.ack_timeout));
  ASSIGN_OR_RETURN(std::optional<v1::Change> current, changes_->GetChange(request.id()));
  if (!current.has_value()) {
    return absl::NotFoundError(absl::StrCat("no change '", request.id().substr(0, 64), "'"));
  }
  ASSIGN_OR_RETURN(v1::ApproverKey key, SigningKeyOf(actor, request));
  // A rollback restores what the hosts journaled; the agents check the applied values
  // themselves, and the latest reports may predate the applied change.
  const bool rollback = current->source() == v1::CHANGE_SOURCE_ROLLBACK;
  // The plans against each host's latest posture, read before the step so that the step holds
  // the change only as long as the decision takes.
  std::vector<v1::RemediationPlan> plans;
  std::map<std::string, StoredPosture> postures;
  std::map<std::string, const v1::Posture*> latest;
  if (!rollback) {
    std::vector<std::string> names;
    names.reserve(current->hosts_size());
    for (const auto& h : current->hosts()) {
      v1::RemediationPlan plan;
      plan.set_hostname(h.host());
      *plan.mutable_steps() = h.steps();
      plans.push_back(std::move(plan));
      names.push_back(h.host());
    }
    ASSIGN_OR_RETURN(postures, hosts_->CurrentPostures(names));  // one read, not one per host
  }
  for (const auto& [name, stored] : postures) latest[name] = &stored.posture;
  ASSIGN_OR_RETURN(std::optional<StaleSetting> stale, FindStaleSetting(plans, latest));

  ApprovalOutcome outcome;
  auto prepare = [&](v1::Change& c) -> absl::StatusOr<Prepared> {
    ChangeFacts facts = FactsOf(c);
    facts.stale = stale;
    ASSIGN_OR_RETURN(outcome, changes::Approve(facts, actor, options_.approval));
    // Over the change as stored now, under its lock: a view fetched before the change moved on
    // does not verify.
    ASSIGN_OR_RETURN(std::string payload, ApprovalPayloadBytes(c));
    if (!VerifyEd25519(key.public_key(), payload, request.signature().signature()).ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "change ", c.id(), ": the signature by ", actor.name, "'s key ", key.key_id(),
          " does not verify over the change as it is now (version ", c.version(), ", content hash ",
          c.content_hash().substr(0, 12),
          "); the change moved on since it was fetched, or the signature is over something "
          "else: show the change again and sign what it shows"));
    }
    Prepared p;
    if (!outcome.counted) {
      p.skip = true;
      return p;
    }
    auto* approval = c.add_approvals();
    approval->set_approver(actor.name);
    *approval->mutable_at() = Ts(clock_());
    approval->set_comment(request.comment());
    approval->set_key_id(key.key_id());
    approval->set_signature(request.signature().signature());
    c.set_approval_payload(payload);
    c.set_approvals_required(static_cast<uint32_t>(outcome.required));
    p.audit.push_back(Entry(actor.name, "approved", c.id(), request.comment(),
                            absl::StrCat("approval ", outcome.approvals, " of ", outcome.required,
                                         ", signed with key ", key.key_id())));
    if (outcome.Complete()) {
      *c.mutable_rollout() = request.rollout();
      p.events.push_back(Event::Approve(spec));
    }
    return p;
  };
  ASSIGN_OR_RETURN(StepResult r, RunStep(request.id(), actor.name, request.comment(), prepare));
  v1::ApproveChangeResponse response;
  *response.mutable_change() = std::move(r.change);
  response.set_approvals(static_cast<uint32_t>(outcome.approvals));
  response.set_approvals_required(static_cast<uint32_t>(outcome.required));
  return response;
}

absl::StatusOr<v1::ApproverKey> ChangeService::SigningKeyOf(
    const Actor& actor, const v1::ApproveChangeRequest& request) {
  const v1::OrderSignature& sig = request.signature();
  if (sig.signature().empty() || sig.key_id().empty()) {
    return absl::InvalidArgumentError(
        "signature: required; an approval is the approver's signature over the change's "
        "approval payload (smbfleetctl changes approve signs it)");
  }
  if (keys_ == nullptr) {
    return absl::FailedPreconditionError("this collector has no approver key registry");
  }
  const std::string key_id = sig.key_id().substr(0, 64);
  ASSIGN_OR_RETURN(std::optional<v1::ApproverKey> key, keys_->GetKey(key_id));
  if (!key.has_value()) {
    return absl::PermissionDeniedError(
        absl::StrCat("signature.key_id: approver key '", key_id, "' is not registered"));
  }
  if (!absl::EqualsIgnoreCase(key->name(), actor.name)) {
    return absl::PermissionDeniedError(absl::StrCat("signature.key_id: approver key ", key_id,
                                                    " is registered to ", key->name(), ", not to ",
                                                    actor.name));
  }
  if (!sig.approver().empty() && !absl::EqualsIgnoreCase(sig.approver(), actor.name)) {
    return absl::PermissionDeniedError(absl::StrCat("signature.approver: '",
                                                    sig.approver().substr(0, 64), "' is not ",
                                                    actor.name, ", who is calling"));
  }
  if (key->has_revoked_at()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "signature.key_id: approver key ", key_id, " of ", key->name(), " was revoked by ",
        key->revoked_by(), " at ", TimeUtil::ToString(key->revoked_at())));
  }
  return *std::move(key);
}

absl::StatusOr<v1::Change> ChangeService::Simple(const Actor& actor, ChangeAction action,
                                                 const std::string& id, const std::string& reason) {
  auto prepare = [&](v1::Change& c) -> absl::StatusOr<Prepared> {
    RETURN_IF_ERROR(CheckAction(action, FactsOf(c), actor));
    Prepared p;
    switch (action) {
      case ChangeAction::kReject:
        c.set_rejected_by(actor.name);
        p.events.push_back(Event::Reject(reason));
        p.audit.push_back(Entry(actor.name, "rejected", c.id(), reason));
        break;
      case ChangeAction::kHalt:
        p.events.push_back(
            Event::Halt(reason.empty() ? absl::StrCat("halted by ", actor.name) : reason));
        break;
      case ChangeAction::kResume:
        p.events.push_back(Event::Resume());
        p.audit.push_back(Entry(actor.name, "resumed", c.id(), reason));
        break;
      case ChangeAction::kRollback:
        p.events.push_back(Event::Rollback(reason));
        p.audit.push_back(Entry(actor.name, "rolled_back", c.id(), reason));
        break;
      case ChangeAction::kApprove:
        return absl::InternalError("approvals go through Approve");
    }
    return p;
  };
  ASSIGN_OR_RETURN(StepResult r, RunStep(id, actor.name, reason, prepare));
  return std::move(r.change);
}

absl::StatusOr<v1::Change> ChangeService::Reject(const Actor& actor, const std::string& id,
                                                 const std::string& reason) {
  if (reason.empty()) return absl::InvalidArgumentError("reason: required to reject a change");
  return Simple(actor, ChangeAction::kReject, id, reason);
}

absl::StatusOr<v1::Change> ChangeService::Halt(const Actor& actor, const std::string& id,
                                               const std::string& reason) {
  return Simple(actor, ChangeAction::kHalt, id, reason);
}

absl::StatusOr<v1::Change> ChangeService::Resume(const Actor& actor, const std::string& id,
                                                 const std::string& reason) {
  return Simple(actor, ChangeAction::kResume, id, reason);
}

absl::StatusOr<v1::ChangeActionResponse> ChangeService::Rollback(const Actor& actor,
                                                                 const std::string& id,
                                                                 const std::string& reason) {
  auto prepare = [&](v1::Change& c) -> absl::StatusOr<Prepared> {
    RETURN_IF_ERROR(CheckAction(ChangeAction::kRollback, FactsOf(c), actor));
    Prepared p;
    p.events.push_back(Event::Rollback(reason));
    p.audit.push_back(Entry(actor.name, "rolled_back", c.id(), reason));
    return p;
  };
  ASSIGN_OR_RETURN(StepResult r, RunStep(id, actor.name, reason, prepare));
  v1::ChangeActionResponse response;
  *response.mutable_change() = std::move(r.change);
  if (r.created.has_value()) *response.mutable_rollback() = std::move(*r.created);
  return response;
}

ChangeService::~ChangeService() = default;

absl::StatusOr<v1::AckChangeResponse> ChangeService::Ack(const std::string& host,
                                                         const v1::AckChangeRequest& ack) {
  absl::Notification answered;
  absl::StatusOr<v1::AckChangeResponse> answer;
  AckAsync(host, ack, [&](absl::StatusOr<v1::AckChangeResponse> r) {
    answer = std::move(r);
    answered.Notify();
  });
  answered.WaitForNotification();
  return answer;
}

void ChangeService::AckAsync(const std::string& host, v1::AckChangeRequest ack, AckDone done) {
  auto mine = std::make_unique<PendingAck>();
  absl::StatusOr<v1::HostChangeState> result = ResultState(ack.result());
  if (!result.ok()) {
    done(result.status());
    return;
  }
  mine->host = host;
  mine->result = *result;
  mine->ack = std::move(ack);
  mine->done = std::move(done);
  const std::string id = mine->ack.change_id().substr(0, 64);
  std::vector<std::unique_ptr<PendingAck>> batch;
  {
    absl::MutexLock lock(&ack_mu_);
    auto [waiting, first] = acks_waiting_.try_emplace(id);
    waiting->second.push_back(std::move(mine));
    if (!first) return;  // the caller running steps on this change takes it with the next one
    batch.swap(waiting->second);
  }
  // This caller runs the steps for this change until no ack waits, its own in the first.
  for (;;) {
    std::vector<PendingAck*> acks;
    for (auto& a : batch) acks.push_back(a.get());
    ApplyAcks(id, acks);
    for (auto& a : batch) FinishAck(id, *a);
    batch.clear();
    absl::MutexLock lock(&ack_mu_);
    auto waiting = acks_waiting_.find(id);
    if (waiting->second.empty()) {
      acks_waiting_.erase(waiting);
      return;
    }
    batch.swap(waiting->second);
  }
}

void ChangeService::FinishAck(const std::string& id, PendingAck& a) {
  if (!a.status.ok()) {
    a.done(a.status);
    return;
  }
  if (metrics_ != nullptr && a.moved) metrics_->OrderAcked(a.ack.result(), a.since_dispatch);
  // Stored after the ack's own step, and never failing it (counters.cc).
  if (a.ack.has_counters_before()) {
    absl::Status counters =
        StoreCounters(a.host, id, a.ack.version(), &a.ack.counters_before(), nullptr);
    if (!counters.ok()) {
      Log()->warn("change {}: counters of {}'s ack not kept: {}", LogSafe(id), LogSafe(a.host),
                  LogSafe(counters));
    }
  }
  Log()->info("change {}: {} acked {}", LogSafe(id), LogSafe(a.host), HostStateName(a.result));
  a.done(v1::AckChangeResponse());
}

absl::Status ChangeService::MatchesOrder(const std::string& id, const v1::Change& change,
                                         const v1::ChangeHost* h, const PendingAck& ack) {
  if (h == nullptr || h->nonce().empty()) {
    return absl::NotFoundError(absl::StrCat("no order of change ", id, " was sent to ", ack.host));
  }
  if (change.version() != ack.ack.version() || h->nonce() != ack.ack.nonce()) {
    return absl::FailedPreconditionError(
        absl::StrCat("change ", id, ": ", ack.host, " acked version ", ack.ack.version(),
                     " nonce '", ack.ack.nonce().substr(0, 64), "', the order sent was version ",
                     change.version(), " nonce '", h->nonce(), "'"));
  }
  return absl::OkStatus();
}

void ChangeService::ApplyAcks(const std::string& id, const std::vector<PendingAck*>& acks) {
  if (ApplyAcksToHosts(id, acks)) return;
  if (acks.size() > 1) {
    // Mostly the wave's last ack is what needs the whole change: the acks before it only record
    // their hosts, and the whole-change step, whose cost grows with its acks times the change's
    // hosts, takes the last one alone. As if it had arrived just after the others.
    const std::vector<PendingAck*> before_last(acks.begin(), acks.end() - 1);
    if (ApplyAcksToHosts(id, before_last)) {
      ApplyAcks(id, {acks.back()});
      return;
    }
  }
  auto prepare = [&](v1::Change& c) -> absl::StatusOr<Prepared> {
    Prepared p;
    p.person = false;
    p.skip = true;
    const std::map<absl::string_view, v1::ChangeHost*> by_name = HostsByName(c);
    // Each host's state after the acks before it in this step: the same ack twice is one.
    std::map<std::string, v1::HostChangeState> acked;
    for (PendingAck* a : acks) {
      a->status = absl::OkStatus();
      a->moved = false;
      a->since_dispatch.reset();
      const v1::AckChangeRequest& ack = a->ack;
      v1::ChangeHost* h = Lookup(by_name, a->host);
      a->status = MatchesOrder(id, c, h, *a);
      if (!a->status.ok()) continue;
      v1::HostChangeState& state = acked.try_emplace(a->host, h->state()).first->second;
      if (state == a->result) continue;  // the same ack again: already recorded and audited
      state = a->result;
      a->moved = true;
      p.skip = false;
      if (h->has_dispatched_at()) {
        a->since_dispatch =
            clock_() - absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(h->dispatched_at()));
      }
      *h->mutable_before() = ack.before();
      *h->mutable_after() = ack.after();
      const std::string message = ack.message().substr(0, 2000);
      // A REFUSED host will not do what the rollout expects of every host: halt as for FAILED.
      // The halt comes first so that the ack cannot complete the rollout on its way.
      if (a->result == v1::HOST_CHANGE_STATE_REFUSED &&
          (c.state() == v1::CHANGE_STATE_ROLLING_OUT || c.state() == v1::CHANGE_STATE_APPROVED)) {
        p.events.push_back(Event::Halt(absl::StrCat("host ", a->host, " acked REFUSED",
                                                    message.empty() ? "" : ": ", message)));
      }
      p.events.push_back(Event::Ack(a->host, a->result, message));
      auto e = Entry(a->host, "acked", c.id(), message, HostStateName(a->result));
      e.set_host(a->host);
      p.audit.push_back(std::move(e));
    }
    return p;
  };
  const std::string actor = acks.size() == 1 ? acks.front()->host : std::string(kCollector);
  auto r = RunStep(id, actor, "", prepare);
  if (r.ok()) return;
  if (acks.size() > 1) {
    // Not this batch's to decide: each ack alone, as if it had come by itself.
    for (PendingAck* a : acks) ApplyAcks(id, {a});
    return;
  }
  PendingAck* a = acks.front();
  a->moved = false;
  if (absl::IsNotFound(r.status()) && !absl::StrContains(r.status().message(), "no order")) {
    a->status =
        absl::NotFoundError(absl::StrCat("no change order '", id, "' was sent to ", a->host));
  } else if (a->status.ok()) {
    a->status = r.status();
  }
}

bool ChangeService::Watching(const std::string& host) const {
  absl::MutexLock lock(&mu_);
  return watched_.count(host) > 0;
}

void ChangeService::RefusalsSeen(const std::string& host,
                                 const std::vector<SeenRefusal>& refusals) {
  std::vector<std::string> ids;
  {
    absl::MutexLock lock(&mu_);
    auto it = watched_.find(host);
    if (it == watched_.end()) return;
    ids = it->second;
  }
  for (const std::string& id : ids) {
    auto prepare = [&](v1::Change& c) -> absl::StatusOr<Prepared> {
      Prepared p;
      p.person = false;
      for (const SeenRefusal& r : refusals) {
        p.events.push_back(Event::RefusalSeen(host, r.client, r.at));
      }
      return p;
    };
    auto r = RunStep(id, kCollector, "", prepare);
    if (!r.ok()) {
      Log()->warn("change {}: refusal events of {} not applied: {}", LogSafe(id), LogSafe(host),
                  LogSafe(r.status()));
    }
  }
}

// Proposals are not live (nothing to tick) but still expire at their not-after time; swept
// once per window_poll.
absl::Status ChangeService::ExpireProposals(absl::Time now) {
  {
    absl::MutexLock lock(&mu_);
    if (now - last_proposal_sweep_ < options_.window_poll) return absl::OkStatus();
    last_proposal_sweep_ = now;
  }
  ChangeQuery q;
  q.state = v1::CHANGE_STATE_PROPOSED;
  q.limit = 10'000;
  ASSIGN_OR_RETURN(std::vector<v1::Change> proposed, changes_->ListChanges(q));
  for (const auto& c : proposed) {
    if (!c.has_not_after() ||
        absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(c.not_after())) > now) {
      continue;
    }
    auto prepare = [](v1::Change&) -> absl::StatusOr<Prepared> {
      Prepared p;
      p.person = false;
      p.events.push_back(Event::Expire());
      return p;
    };
    auto r = RunStep(c.id(), kCollector, "", prepare);
    if (!r.ok()) {
      Log()->warn("change {}: not expired: {}", LogSafe(c.id()), LogSafe(r.status()));
    }
  }
  return absl::OkStatus();
}

void ChangeService::RefreshWatched(const std::vector<v1::Change>& live) {
  std::map<std::string, std::vector<std::string>> watched;
  for (const auto& c : live) {
    if (c.state() != v1::CHANGE_STATE_ROLLING_OUT) continue;
    for (const auto& h : c.hosts()) {
      if (h.state() == v1::HOST_CHANGE_STATE_APPLIED) watched[h.host()].push_back(c.id());
    }
  }
  absl::MutexLock lock(&mu_);
  watched_ = std::move(watched);
}

absl::StatusOr<absl::Time> ChangeService::TickDue() {
  const absl::Time now = clock_();
  absl::Time next = now + options_.window_poll;
  ASSIGN_OR_RETURN(std::vector<std::string> ids, changes_->LiveChangeIds());
  std::vector<v1::Change> live;
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(std::optional<v1::Change> change, changes_->GetChange(id));
    if (!change.has_value()) continue;
    auto rollout = RolloutFromChange(*change, options_.ack_timeout);
    if (!rollout.ok()) {
      Log()->error("change {}: {}", LogSafe(id), LogSafe(rollout.status()));
      continue;
    }
    absl::Time deadline = NextDeadline(*rollout);
    bool waiting_for_window = false;
    if (rollout->state != v1::CHANGE_STATE_HALTED) {
      for (const HostRollout& h : rollout->hosts) {
        if (h.wave == rollout->wave && h.state == v1::HOST_CHANGE_STATE_PENDING) {
          waiting_for_window = true;
        }
      }
    }
    bool window_due = false;
    if (waiting_for_window) {
      absl::MutexLock lock(&mu_);
      auto [it, first] = window_ticks_.try_emplace(id, now);
      window_due = first || now - it->second >= options_.window_poll;
      if (window_due) it->second = now;
    }
    if (deadline <= now || window_due) {
      auto prepare = [](v1::Change&) -> absl::StatusOr<Prepared> {
        Prepared p;
        p.person = false;
        p.events.push_back(Event::Tick());
        return p;
      };
      auto r = RunStep(id, kCollector, "", prepare);
      if (!r.ok()) {
        Log()->warn("change {}: tick failed: {}", LogSafe(id), LogSafe(r.status()));
        continue;
      }
      *change = std::move(r->change);
      auto after = RolloutFromChange(*change, options_.ack_timeout);
      if (after.ok()) deadline = NextDeadline(*after);
    }
    next = std::min(next, deadline);
    live.push_back(std::move(*change));
  }
  RefreshWatched(live);
  RETURN_IF_ERROR(ExpireProposals(now));
  {
    absl::MutexLock lock(&mu_);
    for (auto it = window_ticks_.begin(); it != window_ticks_.end();) {
      it = std::find(ids.begin(), ids.end(), it->first) == ids.end() ? window_ticks_.erase(it)
                                                                     : std::next(it);
    }
  }
  return std::max(next, now);
}

}  // namespace smbfleet::collector::changes
