#ifndef SMBFLEET_AGENT_CORE_CHANGE_EXECUTOR_H_
#define SMBFLEET_AGENT_CORE_CHANGE_EXECUTOR_H_

// Carries out the change orders that arrive on the Watch stream, one at a time:
//
//   enforcement on? -> approvals (OrderVerifier: signatures, host, not-after) -> replay?
//   -> local allowlist -> read current values, check expected_current
//   -> journal "started" with the before-values -> apply (platform SettingsApplier)
//   -> journal "finished" with the ack (before/after, the load window before) -> AckChange
//   -> report "after_change"
//   -> journal "acked"
//
// Only the signed payload's settings for this host are applied, never the order's unsigned
// fields. Nothing is touched for an expired order (FAILED), a refused one (REFUSED: approvals,
// replay, enforcement, allowlist) or a failed precondition (PRECONDITION_FAILED). A failed apply is
// undone from the journaled before-values (ROLLED_BACK; FAILED naming both errors when the undo
// fails too). An order already in the journal is not applied again: its ack is sent again. Acks are
// retried with backoff until the collector has them, across restarts. At start, Open() finishes
// orders a crash interrupted: if the host has the order's values it acks APPLIED, otherwise it
// restores the before-values and acks ROLLED_BACK "interrupted by agent restart".

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/core/agent_config.h"
#include "agent/core/approver_trust.h"
#include "agent/core/backoff.h"
#include "agent/core/change_journal.h"
#include "agent/core/clock.h"
#include "agent/core/counter_windows.h"
#include "agent/core/replay_store.h"
#include "agent/core/settings_applier.h"
#include "agent/core/transport.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

// Test only: where a simulated crash stops an order (see docs/agent-changes.md).
enum class CrashPoint {
  kNone,
  kBeforeJournal,
  kAfterJournal,
  kAfterApply,
  kAfterFinish,
  kAfterAck
};

// Reads SMBFLEET_AGENT_TEST_CRASH_AFTER (journal, apply, finish, ack); kNone when unset.
absl::StatusOr<CrashPoint> CrashPointFromEnv();

struct ChangeExecutorOptions {
  ChangesConfig changes;
  // The approver keys this host trusts (not owned). Null: every order is refused.
  ApproverTrust* trust = nullptr;
  // This host's certificate identity: only the payload's settings for it are applied.
  std::string host;
  // Why the applier is null, for the REFUSED message (e.g. "source windows-capture:DIR").
  std::string no_applier_reason = "this agent's source cannot apply changes";
  size_t max_completed_ids = 100;  // WatchRequest.completed_change_ids
  std::chrono::milliseconds ack_max_backoff{300'000};
  std::function<absl::Time()> wall_now = [] { return absl::Now(); };  // for not_after
  // The load windows around each order that touched the host (not owned; opened by the caller).
  // Null: acks carry no counters_before and no after-window is recorded.
  CounterWindows* counters = nullptr;
  // Test only. kNone in production. With crash_exits the process _exits (code 75) at that
  // point; otherwise the executor stops doing anything, as if it had died.
  CrashPoint crash_after = CrashPoint::kNone;
  bool crash_exits = false;
};

class ChangeExecutor {
 public:
  // applier may be null (a source that cannot apply: every order is REFUSED); not owned.
  ChangeExecutor(ChangeExecutorOptions options, SettingsApplier* applier, CollectorClient* client,
                 Clock* clock = RealClock(), uint64_t seed = 1);

  // Loads the journal and recovers orders a crash interrupted (their acks are queued).
  absl::Status Open();

  // Called after an order touched the host, so that a report with reason after_change follows.
  void set_on_changed(std::function<void()> f) { on_changed_ = std::move(f); }

  // Queues an order (any thread).
  void Submit(const smbfleet::v1::ChangeOrder& order);
  // Finished change ids, most recent first (any thread).
  std::vector<std::string> CompletedChangeIds();

  // Works the queue and retries acks until Stop().
  void Run();
  void Stop();
  // Works the queue until empty and tries every undelivered ack once; for callers without a
  // thread of their own (tests, `run --once`).
  void Drain();

  bool crashed() const { return crashed_; }

 private:
  struct Outcome {
    smbfleet::v1::AckChangeRequest::Result result;
    std::string message;
  };
  void Process(const smbfleet::v1::ChangeOrder& order);
  // Records the ack without touching the host (refused, expired, precondition, malformed).
  void FinishUntouched(const smbfleet::v1::ChangeOrder& order, Outcome outcome,
                       std::vector<smbfleet::v1::SettingChange> current);
  // touched: the apply began (or a crash interrupted it): the ack carries the before-window and
  // an after-window is recorded.
  void Finish(JournalEntry entry, Outcome outcome, std::vector<smbfleet::v1::SettingChange> after,
              bool touched = false);
  // Enforcement on and an applier: the host takes orders at all.
  absl::Status CheckConsent() const;
  // Every setting of the (verified) order on the local allowlist.
  absl::Status CheckAllowed(const smbfleet::v1::ChangeOrder& order) const;
  // Restores before-values; OK when the host has them again.
  absl::Status RestoreBefore(const JournalEntry& entry);
  void Recover(const JournalEntry& entry);
  // Sends every finished, unacked ack; false when one could not be delivered.
  bool DeliverAcks();
  bool Crash(CrashPoint point);
  bool HasPendingAcks();

  ChangeExecutorOptions options_;
  SettingsApplier* applier_;
  CollectorClient* client_;
  Clock* clock_;
  std::function<void()> on_changed_;
  bool crashed_ = false;

  // The journal and the applier are used by one thread at a time: apply_mu_.
  std::mutex apply_mu_;
  ChangeJournal journal_ ABSL_GUARDED_BY(apply_mu_);
  ReplayStore replay_ ABSL_GUARDED_BY(apply_mu_);  // in the journal folder

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<smbfleet::v1::ChangeOrder> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> completed_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  Backoff ack_backoff_;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_CHANGE_EXECUTOR_H_
