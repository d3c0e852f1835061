#ifndef SMBFLEET_COLLECTOR_CHANGES_CHANGE_SERVICE_H_
#define SMBFLEET_COLLECTOR_CHANGES_CHANGE_SERVICE_H_

// The change workflow with its I/O: propose from stored postures, approve / reject / halt /
// resume / roll back, agents' acks, refusal events, the scheduler's ticks and waivers. Every
// step is one ChangeStore::UpdateChange whose step function runs the pure core (approval.h,
// rollout.h through change_rollout.h); after it committed, the hosts that got orders are
// signalled (OrderSignal) so that whichever collector holds their streams sends them.
//
// Callers authorize first (collector/auth Authorize, by AdminApi); these functions still apply
// the change rules' role, state and four-eyes checks with the Actor they are given.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/changes/approval.h"
#include "collector/ingest/change_counters_sink.h"
#include "collector/ingest/refusals.h"
#include "collector/metrics/metrics.h"
#include "collector/push/order_signal.h"
#include "collector/store/approver_key_store.h"
#include "collector/store/change_store.h"
#include "collector/store/compliance_store.h"
#include "collector/store/enrollment_store.h"
#include "collector/store/host_store.h"
#include "common/approval_signing.h"
#include "policy/policy.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector::changes {

struct ChangeOptions {
  ApprovalPolicy approval;                         // changes.two_approvers_above_hosts
  absl::Duration lifetime = absl::Hours(7 * 24);   // changes.lifetime: proposal to not-after
  absl::Duration ack_timeout = absl::Minutes(15);  // changes.ack_timeout: an order's lifetime
  absl::Duration window_poll = absl::Minutes(1);   // hosts waiting for a window: tick this often
};

class ChangeService : public RefusalObserver, public ChangeCountersSink {
 public:
  using Clock = std::function<absl::Time()>;

  // `policy` may be null: then only --settings proposals are possible.
  ChangeService(ChangeStore* changes, HostStore* hosts, ComplianceStore* compliance,
                const policy::Policy* policy, ChangeOptions options, Clock clock = absl::Now);
  ~ChangeService();

  // The policy proposals are planned with (null: none); readiness plans with it too.
  const policy::Policy* policy() const { return policy_; }
  // Where dispatched hosts are announced (after each committed step). Set before use.
  void SetOrderSignal(OrderSignal* signal) { signal_ = signal; }
  // Counts acks by result and the time from dispatch to ack (not owned; may stay null).
  void SetMetrics(Metrics* metrics) { metrics_ = metrics; }
  // The approvers' registered keys that approvals are checked against. Set before use: without
  // it every approval is refused.
  void SetApproverKeys(ApproverKeyStore* keys) { keys_ = keys; }
  // The labels policy trusts (enrollment scope, SetHostLabels). Set: a proposal's label selector,
  // its plan and the hosts' labels in the change (maintenance windows) use them, never what the
  // agents report. Not set: the labels the host store has.
  void SetTrustedLabels(EnrollmentStore* labels) { trusted_labels_ = labels; }

  absl::StatusOr<smbfleet::v1::ProposeChangeResponse> Propose(
      const Actor& actor, const smbfleet::v1::ProposeChangeRequest& request);
  // Besides the four-eyes rules, the request's signature must be by the caller's own registered,
  // unrevoked key (PERMISSION_DENIED otherwise) over ApprovalPayloadBytes of the change as
  // stored now (FAILED_PRECONDITION: the change moved on since it was fetched, or the signature
  // is over something else). The approval keeps the key id and the signature.
  absl::StatusOr<smbfleet::v1::ApproveChangeResponse> Approve(
      const Actor& actor, const smbfleet::v1::ApproveChangeRequest& request);
  absl::StatusOr<smbfleet::v1::Change> Reject(const Actor& actor, const std::string& id,
                                              const std::string& reason);
  absl::StatusOr<smbfleet::v1::Change> Halt(const Actor& actor, const std::string& id,
                                            const std::string& reason);
  absl::StatusOr<smbfleet::v1::Change> Resume(const Actor& actor, const std::string& id,
                                              const std::string& reason);
  // The original change (ROLLED_BACK) and the linked rollback change, if any host had applied.
  // The rollback change is PROPOSED (proposed_by: the original proposer, requested_by: the
  // caller) and is dispatched, like any change, once approvers signed it.
  absl::StatusOr<smbfleet::v1::ChangeActionResponse> Rollback(const Actor& actor,
                                                              const std::string& id,
                                                              const std::string& reason);

  // An agent's ack; `host` is its certificate's. NotFound: no such order was sent to the host;
  // FailedPrecondition: the version or nonce is not the one last dispatched. The same result
  // again is accepted and changes nothing. A REFUSED ack halts the rollout like FAILED: the
  // host will not apply what the rollout expects of every host. Acks of one change that arrive
  // while a step on it runs wait and are then applied together, in one step (a push to many
  // hosts would otherwise take one step per host, one after another). That step reads and
  // writes only the acking hosts unless an ack can move the rollout on (its wave done, a halt,
  // a timeout or window due): then it is the whole-change step, which takes only the batch's
  // last ack when the acks before it can be recorded on their hosts alone.
  absl::StatusOr<smbfleet::v1::AckChangeResponse> Ack(const std::string& host,
                                                      const smbfleet::v1::AckChangeRequest& ack);
  // The same, answering through `done`: when a step on the change runs, the ack waits for the
  // next one without holding the calling thread, and `done` runs on the thread that applies it.
  using AckDone = std::function<void(absl::StatusOr<smbfleet::v1::AckChangeResponse>)>;
  void AckAsync(const std::string& host, smbfleet::v1::AckChangeRequest ack, AckDone done);

  // ChangeCountersSink (the report pipeline): each entry's windows go to `host`'s part in that
  // change and version (counters.cc). Unknown changes, other hosts' changes and windows that
  // fail their checks are logged and skipped.
  void CountersReported(
      const std::string& host,
      const google::protobuf::RepeatedPtrField<smbfleet::v1::ChangeCounters>& counters) override;

  // RefusalObserver (the report pipeline): cheap for hosts in no live rollout.
  bool Watching(const std::string& host) const override;
  void RefusalsSeen(const std::string& host, const std::vector<SeenRefusal>& refusals) override;

  // One scheduler pass: ticks every live change whose deadline passed or whose hosts wait for
  // a window (at most every window_poll), and refreshes the hosts in live rollouts. Returns
  // when to come back at the latest.
  absl::StatusOr<absl::Time> TickDue();

  // Waivers: requested by a proposer, approved by a different approver, revoked by an approver
  // or admin; each step audited.
  absl::StatusOr<smbfleet::v1::Waiver> RequestWaiver(const Actor& actor,
                                                     const smbfleet::v1::Waiver& request);
  absl::StatusOr<smbfleet::v1::Waiver> ApproveWaiver(const Actor& actor, const std::string& id,
                                                     const std::string& comment);
  absl::StatusOr<smbfleet::v1::Waiver> RevokeWaiver(const Actor& actor, const std::string& id,
                                                    const std::string& reason);

  const ChangeOptions& options() const { return options_; }

 private:
  struct Prepared;
  // One agent's ack on its way into a step, and what became of it.
  struct PendingAck {
    std::string host;
    smbfleet::v1::AckChangeRequest ack;
    AckDone done;
    smbfleet::v1::HostChangeState result = smbfleet::v1::HOST_CHANGE_STATE_UNSPECIFIED;
    absl::Status status;                           // its own outcome
    bool moved = false;                            // it changed the host's state
    std::optional<absl::Duration> since_dispatch;  // of the order acked, when the change says
  };
  // Whether `ack` answers the order change `id` (at `change`'s version) sent to its host `h`
  // (nullptr: the change has no such host): NOT_FOUND when no order went there,
  // FAILED_PRECONDITION naming both when the version or the nonce is not the order's.
  static absl::Status MatchesOrder(const std::string& id, const smbfleet::v1::Change& change,
                                   const smbfleet::v1::ChangeHost* h, const PendingAck& ack);
  // Applies `acks` (all of one change) in one workflow step; should that step fail, each again
  // in a step of its own, so that one ack's error is its own. Sets each one's outcome.
  void ApplyAcks(const std::string& id, const std::vector<PendingAck*>& acks);
  // The same in a step on the acking hosts alone (ChangeStore::UpdateChangeHosts), when none of
  // the acks can move the rollout on (ack_step.cc). False when one can, or the step failed:
  // then nothing was written and ApplyAcks takes the whole change.
  bool ApplyAcksToHosts(const std::string& id, const std::vector<PendingAck*>& acks);
  // Its metrics, counters and log line, then its answer.
  void FinishAck(const std::string& id, PendingAck& ack);
  using Prepare = std::function<absl::StatusOr<Prepared>(smbfleet::v1::Change& change)>;
  struct StepResult {
    smbfleet::v1::Change change;
    std::optional<smbfleet::v1::Change> created;
  };

  // One workflow step on change `id` by `actor` (a person, a host or "collector"), see .cc.
  absl::StatusOr<StepResult> RunStep(const std::string& id, const std::string& actor,
                                     const std::string& reason, const Prepare& prepare);
  // The caller's registered, unrevoked key that the request's signature names.
  absl::StatusOr<smbfleet::v1::ApproverKey> SigningKeyOf(
      const Actor& actor, const smbfleet::v1::ApproveChangeRequest& request);
  absl::StatusOr<smbfleet::v1::Change> Simple(const Actor& actor, ChangeAction action,
                                              const std::string& id, const std::string& reason);
  void RefreshWatched(const std::vector<smbfleet::v1::Change>& live);
  // Checks and summarises the windows, keeps the before-window only when none is stored yet,
  // and computes the measured effect once both are there. Either window may be null.
  absl::Status StoreCounters(const std::string& host, const std::string& change_id,
                             uint64_t version, const smbfleet::v1::CounterWindow* before,
                             const smbfleet::v1::CounterWindow* after);
  absl::Status ExpireProposals(absl::Time now);

  ChangeStore* changes_;
  HostStore* hosts_;
  ComplianceStore* compliance_;
  const policy::Policy* policy_;
  const ChangeOptions options_;
  Clock clock_;
  OrderSignal* signal_ = nullptr;
  Metrics* metrics_ = nullptr;
  ApproverKeyStore* keys_ = nullptr;
  EnrollmentStore* trusted_labels_ = nullptr;

  mutable absl::Mutex mu_;
  // host -> live changes that target it, refreshed by TickDue: the refusal check's cheap test.
  std::map<std::string, std::vector<std::string>> watched_ ABSL_GUARDED_BY(mu_);
  // change id -> when it was last ticked for a window.
  std::map<std::string, absl::Time> window_ticks_ ABSL_GUARDED_BY(mu_);
  absl::Time last_proposal_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  // Acks waiting for the step that applies them, per change id; an entry exists while one
  // caller (the first to arrive) runs steps for that change, and it runs them until none wait.
  absl::Mutex ack_mu_;
  std::map<std::string, std::vector<std::unique_ptr<PendingAck>>> acks_waiting_
      ABSL_GUARDED_BY(ack_mu_);
};

// The order a host gets for `change` (settings from its steps, id, version, nonce, not-after),
// with the change's approval payload and every approval's signature, which is what the agent
// verifies and applies. `change` must contain `host`; hosts other than it are ignored. For a v2
// payload, `tree` (ApprovalTreeOf the whole change) gives the host's own signed order and its
// inclusion proof; without it the order carries none, and the agent refuses it.
smbfleet::v1::ChangeOrder OrderFor(const smbfleet::v1::Change& change, const std::string& host,
                                   const ApprovalHostTree* tree);

// Random identifiers: a change id (UUID v4) and an order nonce (128 bits, hex).
std::string NewChangeId();
std::string NewNonce();

// The content hash: SHA-256 (hex) over the hosts (by name) and their steps (and the change a
// rollback undoes); two proposals of the same content hash alike.
std::string ContentHash(const smbfleet::v1::Change& change);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_CHANGE_SERVICE_H_
