#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_FAKE_POWERSHELL_RUNNER_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_FAKE_POWERSHELL_RUNNER_H_

// A PowerShellRunner for tests on any OS: replays a capture folder (probe "Get-SmbShare" ->
// Get-SmbShare.json, "host" -> host.json, "events" -> events.json), records every script it was
// asked to run, and emulates the apply script on its replayed state so that a re-read after an
// apply shows the new values.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/platform/windows/windows_source.h"

namespace smbfleet::agent::windows::testing {

class FakePowerShellRunner : public PowerShellRunner {
 public:
  // capture_dir may be empty: then every probe prints nothing until SetOutput.
  explicit FakePowerShellRunner(std::string capture_dir = "");

  absl::StatusOr<std::string> Run(const PowerShellScript& script) override;

  void SetOutput(const std::string& probe, std::string bytes);
  void SetError(const std::string& probe, absl::Status status);
  void ClearError(const std::string& probe);
  // The n-th apply call (1-based, counted from now) fails with `status` before changing anything,
  // and so does every later one when `and_later`; the others apply. For a failure midway through
  // a multi-call change.
  void FailApplyCall(int n, absl::Status status, bool and_later = false);
  // false: the apply script "succeeds" but the state does not change (a GPO reverting it).
  void set_apply_sticks(bool sticks) { apply_sticks_ = sticks; }

  const std::vector<PowerShellScript>& calls() const { return calls_; }
  std::vector<PowerShellScript> CallsOf(const std::string& probe) const;
  void ClearCalls() { calls_.clear(); }

 private:
  absl::StatusOr<std::string> Apply(const std::string& data_json);
  absl::StatusOr<std::string> Output(const std::string& probe);

  std::string dir_;
  std::map<std::string, std::string> outputs_;
  std::map<std::string, absl::Status> errors_;
  std::vector<PowerShellScript> calls_;
  bool apply_sticks_ = true;
  int fail_apply_in_ = 0;  // apply calls until the failing one; 0 = none
  absl::Status fail_apply_status_;
  bool fail_later_ = false;
};

}  // namespace smbfleet::agent::windows::testing

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_TESTING_FAKE_POWERSHELL_RUNNER_H_
