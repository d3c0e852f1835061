#ifndef SMBFLEET_CLI_CHANGE_RENDER_H_
#define SMBFLEET_CLI_CHANGE_RENDER_H_

// Text views of changes, the audit log and waivers (--format=json prints the protobuf JSON
// mapping instead). Every string from a host or a person goes through Clean().

#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::cli {

// `changes propose`: the new id alone on the first line (scripts read it), then a summary and
// the hosts that were skipped with why.
void RenderProposed(const smbfleet::v1::ProposeChangeResponse& r, std::ostream& out);

// `changes list`: one line per change: id, state, hosts, approvals n/m, proposer, age, reason.
void RenderChangeList(const smbfleet::v1::ListChangesResponse& r, absl::Time now,
                      std::ostream& out);

// `changes show`: fleet-wide impact first, approvals, rollout, then each host.
void RenderChange(const smbfleet::v1::Change& c, std::ostream& out);

// One line after approve / reject / halt / resume / rollback.
void RenderApproved(const smbfleet::v1::ApproveChangeResponse& r, std::ostream& out);
void RenderChangeAction(const std::string& action, const smbfleet::v1::Change& c,
                        const smbfleet::v1::Change* rollback, std::ostream& out);

// `audit`: one line per entry: seq, time, actor, action, change/waiver, host, reason, detail.
void RenderAudit(const smbfleet::v1::ListAuditResponse& r, std::ostream& out);

// `waivers list` and the one-line answers of request / approve / revoke.
void RenderWaivers(const smbfleet::v1::ListWaiversResponse& r, std::ostream& out);
void RenderWaiver(const std::string& action, const smbfleet::v1::Waiver& w, std::ostream& out);

// `changes calibration`: what it covers, then one row per host class: platform, protection
// before -> after, change hosts, predicted vs measured CPU change points and the error, the
// model's vs the measured CPU per byte, and the suggestion. `--save` prints the id first.
void RenderCalibration(const smbfleet::v1::CostModelCalibration& c, std::ostream& out);
// `changes calibration --history`: one line per saved calibration, newest first.
void RenderCalibrationHistory(const smbfleet::v1::ListCostModelCalibrationsResponse& r,
                              std::ostream& out);

// "42s", "5m", "3h", "2d": how long ago, for tables.
std::string AgeText(absl::Duration d);

// `changes watch`: remembers what it printed and, for each new GetChange answer, returns a line
// per host whose state or message changed and one when the change's state (or wave, or halt
// reason) changed: "TIME  HOST  STATE  MESSAGE", the change itself as "change".
class WatchPrinter {
 public:
  std::vector<std::string> Update(const smbfleet::v1::Change& c, absl::Time now);

 private:
  bool first_ = true;
  std::string change_;  // state, wave and halt reason as last printed
  std::map<std::string, std::pair<smbfleet::v1::HostChangeState, std::string>> hosts_;
};

// Whether `changes watch` is done. It keeps watching while the change waits for approval, is
// approved, rolling out or HALTED (a person may resume it); it ends when the change is COMPLETED
// (success only if every host APPLIED), REJECTED, ROLLED_BACK or EXPIRED.
enum class WatchOutcome { kContinue, kSucceeded, kFailed };
WatchOutcome WatchOutcomeOf(const smbfleet::v1::Change& c);

// A change's hosts by where they stand: applied (APPLIED), failed (FAILED, TIMED_OUT,
// ROLLED_BACK), refused (REFUSED, PRECONDITION_FAILED), pending (PENDING, DISPATCHED).
struct HostTally {
  int applied = 0;
  int failed = 0;
  int refused = 0;
  int pending = 0;
};
HostTally TallyHosts(const smbfleet::v1::Change& c);

// `changes watch` on a terminal: one line, redrawn in place, at most `width` columns (0: 80):
// "CHG-1  ROLLING_OUT  wave 1/2  [####xx!!......]  4 applied  2 failed  2 refused  6 pending"
// (# applied, x failed, ! refused, . pending; the bar 10 to 40 columns).
std::string ProgressLine(const smbfleet::v1::Change& c, size_t width);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_CHANGE_RENDER_H_
