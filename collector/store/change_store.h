#ifndef SMBFLEET_COLLECTOR_STORE_CHANGE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_CHANGE_STORE_H_

// Changes (proposals, approvals, rollout state per host), the append-only audit log, and
// waivers' request/approve workflow. Every workflow step is one transaction: the caller decides
// (collector/changes/, pure) inside the step function, the store reads, locks and writes.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {

// Counters around a change on one host (ChangeHost counters_before, counters_after, measured).
// Each set field is written; an unset one is left as stored.
struct HostCounters {
  std::optional<smbfleet::v1::CounterWindow> before;
  std::optional<smbfleet::v1::CounterWindow> after;
  std::optional<smbfleet::v1::MeasuredImpact> measured;
};

// A change host with a measured impact (ChangeHost.measured), for calibrating the cost model.
struct MeasuredChangeHost {
  std::string change_id;
  // The host's platform as the host store knows it; UNSPECIFIED when the host is not stored.
  smbfleet::v1::Platform platform = smbfleet::v1::PLATFORM_UNSPECIFIED;
  // Its impact (with the prediction) and measured; without the counter windows.
  smbfleet::v1::ChangeHost host;
};

struct MeasuredChangeHosts {
  std::vector<MeasuredChangeHost> hosts;  // newest finished_at first
  bool truncated = false;                 // more matched than the limit
};

struct ChangeQuery {
  smbfleet::v1::ChangeState state = smbfleet::v1::CHANGE_STATE_UNSPECIFIED;  // any
  uint32_t limit = 100;
};

struct AuditQuery {
  std::string change_id;  // empty: any
  std::string waiver_id;  // empty: any
  int64_t after_seq = 0;  // entries with a greater seq, oldest first
  uint32_t limit = 1000;
};

// What one workflow step writes, in the same transaction as it read the change.
struct ChangeUpdate {
  smbfleet::v1::Change change;  // the whole change after the step (same id)
  // One per transition; the store assigns seq and, when unset, at.
  std::vector<smbfleet::v1::AuditEntry> audit;
  // A linked change made by this step (a rollback), stored in the same transaction.
  std::optional<smbfleet::v1::Change> created;
};

// What a step on some of a change's hosts (UpdateChangeHosts) knows of every other host of the
// change, counted under the change's lock: enough for the rollout to tell whether the step
// could move it on (collector/changes/, ChangeService's acks).
struct OtherHosts {
  // A host of the change's current wave (Change.current_wave) is PENDING, or DISPATCHED.
  bool wave_pending = false;
  bool wave_dispatched = false;
  uint32_t precondition_failed = 0;  // hosts PRECONDITION_FAILED, in any wave
  // The earliest dispatched_at of a DISPATCHED host (InfinitePast for one without it, which the
  // rollout takes as timed out); InfiniteFuture when none is DISPATCHED.
  absl::Time earliest_dispatched = absl::InfiniteFuture();
};

// What a step on some of a change's hosts writes, in the same transaction as it read them.
struct HostsUpdate {
  // The change after the step (same id); its own row is written, never its hosts or approvals.
  smbfleet::v1::Change change;
  // The step's hosts after it, each one it was given (by name); one left out is left as it is.
  std::vector<smbfleet::v1::ChangeHost> hosts;
  // One per transition; the store assigns seq and, when unset, at.
  std::vector<smbfleet::v1::AuditEntry> audit;
};

// Every failure is an absl::Status naming what failed; no database exception crosses this
// interface.
class ChangeStore {
 public:
  virtual ~ChangeStore() = default;

  // Stores a new change (its id chosen by the caller) with its audit entries. AlreadyExists for
  // a used id; FailedPrecondition when an approval in it names its proposer (four-eyes, also a
  // database constraint).
  virtual absl::Status CreateChange(const smbfleet::v1::Change& change,
                                    const std::vector<smbfleet::v1::AuditEntry>& audit) = 0;
  // Each host with its counters (HostCounters); no other read carries them.
  virtual absl::StatusOr<std::optional<smbfleet::v1::Change>> GetChange(const std::string& id) = 0;
  // Newest first, each without hosts[] (GetChange has them).
  virtual absl::StatusOr<std::vector<smbfleet::v1::Change>> ListChanges(
      const ChangeQuery& query) = 0;

  // One workflow step: reads the change and locks it (steps on one change run one after another,
  // across collector processes), calls `step`, writes its ChangeUpdate and audit entries, and
  // returns the change as written. When `step` fails nothing is written and its error is
  // returned. NotFound for an unknown id. Also keeps each host's HostChangeStatus: a host that
  // became DISPATCHED is desired at (change id, version); an ack result (APPLIED, FAILED, ...)
  // sets last_result, last_error and last_ack_at, and APPLIED sets applied.
  using StepFn = std::function<absl::StatusOr<ChangeUpdate>(const smbfleet::v1::Change& current)>;
  virtual absl::StatusOr<smbfleet::v1::Change> UpdateChange(const std::string& id,
                                                            const StepFn& step) = 0;

  // A workflow step scoped to `hosts` of change `id` (an agent's ack): locks the change as
  // UpdateChange does (both kinds of step on one change run one after another, across collector
  // processes), reads the change without hosts and approvals, those of `hosts` it names (in that
  // order, each once; hosts it does not name are left out) and OtherHosts, calls `step`, and
  // writes the change's row, the hosts it returns (never their counters), their HostChangeStatus
  // as UpdateChange keeps it, and the audit entries. It reads and writes no other host's row, so
  // its cost does not grow with the change. When `step` returns nullopt nothing is written (the
  // step needs the whole change: UpdateChange); when it fails nothing is written and its error
  // is returned. NotFound for an unknown id.
  using HostsStepFn = std::function<absl::StatusOr<std::optional<HostsUpdate>>(
      const smbfleet::v1::Change& change, const std::vector<smbfleet::v1::ChangeHost>& hosts,
      const OtherHosts& others)>;
  virtual absl::Status UpdateChangeHosts(const std::string& id,
                                         const std::vector<std::string>& hosts,
                                         const HostsStepFn& step) = 0;

  // Counters arrive with acks and later reports and may be large, so they are kept apart from
  // the workflow: UpdateChange's steps neither see nor write them. This reads the change (without
  // hosts) and `host`'s entry with its counters, locks that entry, calls `step`, and writes what
  // it returns. NotFound when the change does not exist or does not name the host; a failed
  // step writes nothing and its error is returned.
  using CountersStepFn = std::function<absl::StatusOr<HostCounters>(
      const smbfleet::v1::Change& change, const smbfleet::v1::ChangeHost& host)>;
  virtual absl::Status UpdateHostCounters(const std::string& change_id, const std::string& host,
                                          const CountersStepFn& step) {
    return absl::UnimplementedError("this change store does not keep counters");
  }

  // The change hosts with a measured impact that finished (were acked) at or after `since`,
  // newest first, at most `limit`, each with its host's platform.
  virtual absl::StatusOr<MeasuredChangeHosts> ListMeasuredChangeHosts(absl::Time since,
                                                                      uint32_t limit) {
    return absl::UnimplementedError("this change store does not list measured change hosts");
  }

  // Saved calibrations of the cost model (migration 0013). Save stores `calibration` (its id is
  // assigned: the returned one) with its groups and inputs, and `audit` in the same transaction,
  // its detail ending with " (calibration ID)". List: newest first, at most `limit`, each with
  // its groups and input_count but without inputs.
  virtual absl::StatusOr<int64_t> SaveCostModelCalibration(
      const smbfleet::v1::CostModelCalibration& calibration, smbfleet::v1::AuditEntry audit) {
    return absl::UnimplementedError("this change store does not keep calibrations");
  }
  virtual absl::StatusOr<std::vector<smbfleet::v1::CostModelCalibration>> ListCostModelCalibrations(
      uint32_t limit) {
    return absl::UnimplementedError("this change store does not keep calibrations");
  }

  // The orders `host` should have now: changes in which it is DISPATCHED and its order's
  // not-after is later than `now`, oldest first. Each change carries only that host in hosts[].
  virtual absl::StatusOr<std::vector<smbfleet::v1::Change>> PendingForHost(const std::string& host,
                                                                           absl::Time now) = 0;
  // PendingForHost of each of `hosts` in one read (the dispatch of a wave): by host, only the
  // hosts that have an order, each host's changes oldest first and carrying only that host.
  // The default reads them one host at a time.
  virtual absl::StatusOr<std::map<std::string, std::vector<smbfleet::v1::Change>>> PendingForHosts(
      const std::vector<std::string>& hosts, absl::Time now) {
    std::map<std::string, std::vector<smbfleet::v1::Change>> out;
    for (const std::string& host : hosts) {
      absl::StatusOr<std::vector<smbfleet::v1::Change>> pending = PendingForHost(host, now);
      if (!pending.ok()) return pending.status();
      if (!pending->empty()) out[host] = *std::move(pending);
    }
    return out;
  }
  // Changes the scheduler must tick: APPROVED, ROLLING_OUT and HALTED.
  virtual absl::StatusOr<std::vector<std::string>> LiveChangeIds() = 0;
  // Desired vs applied for these hosts; hosts that never had a change are absent.
  virtual absl::StatusOr<std::map<std::string, smbfleet::v1::HostChangeStatus>> HostStatuses(
      const std::vector<std::string>& hosts) = 0;
  // Hosts whose desired change is not the one they applied (the overview's drift): how many,
  // and the first `limit` of them by name.
  struct Drift {
    uint32_t count = 0;
    std::vector<std::string> hosts;
  };
  virtual absl::StatusOr<Drift> DriftedHosts(uint32_t limit) {
    return absl::UnimplementedError("this change store does not list drifted hosts");
  }

  // Audit entries not tied to a change step (e.g. a refused approval is not audited; a waiver
  // step is, through UpdateWaiver).
  virtual absl::Status AppendAudit(const std::vector<smbfleet::v1::AuditEntry>& entries) = 0;
  virtual absl::StatusOr<std::vector<smbfleet::v1::AuditEntry>> ListAudit(
      const AuditQuery& query) = 0;

  // Waivers. CreateWaiver stores a REQUESTED waiver (id chosen by the caller) with its audit
  // entry. UpdateWaiver is one step like UpdateChange (approve: a different person than
  // created_by, also a database constraint; revoke). ComplianceStore::ActiveWaivers returns
  // only APPROVED, unrevoked waivers whose expires_at is in the future.
  virtual absl::Status CreateWaiver(const smbfleet::v1::Waiver& waiver,
                                    const smbfleet::v1::AuditEntry& audit) = 0;
  using WaiverStepFn =
      std::function<absl::StatusOr<std::pair<smbfleet::v1::Waiver, smbfleet::v1::AuditEntry>>(
          const smbfleet::v1::Waiver&)>;
  virtual absl::StatusOr<smbfleet::v1::Waiver> UpdateWaiver(const std::string& id,
                                                            const WaiverStepFn& step) = 0;
  // Every waiver, or only those applying at `now`; state EXPIRED is reported for approved
  // waivers past expires_at.
  virtual absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ListWaivers(bool include_inactive,
                                                                        absl::Time now) = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_CHANGE_STORE_H_
