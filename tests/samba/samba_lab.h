#ifndef SMBFLEET_TESTS_SAMBA_SAMBA_LAB_H_
#define SMBFLEET_TESTS_SAMBA_SAMBA_LAB_H_

// A real smbd on 127.0.0.1 for one test: its own directory, port, config, state and user,
// driven through deploy/samba-lab.sh. Sessions are real smbclient processes. The destructor
// stops everything the lab started, by PID, even when the test failed.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/platform/samba/samba_source.h"

namespace smbfleet::testing {

class SambaLab {
 public:
  // Settings written into the agent-managed include files before smbd first starts.
  struct Setup {
    std::string global;                         // e.g. "server min protocol = NT1\n"
    std::map<std::string, std::string> shares;  // share -> lines
  };

  // Skips nothing: fails with a clear status when not root or a Samba package is missing.
  static absl::StatusOr<std::unique_ptr<SambaLab>> Start(const Setup& setup = {});
  ~SambaLab();

  const std::string& dir() const { return dir_; }
  int port() const { return port_; }
  std::string smb_conf() const { return dir_ + "/smb.conf"; }
  std::string managed_dir() const { return dir_ + "/conf.d"; }

  // Options for NewSambaSource / SambaApplier pointing at this server.
  agent::SambaOptions Options() const;
  agent::CommandRunner* runner() { return runner_.get(); }

  // A session that stays open until Release (samba-lab.sh hold).
  absl::Status Hold(const std::string& name, const std::string& share,
                    const std::vector<std::string>& smbclient_options = {});
  absl::Status Send(const std::string& name, const std::string& command);
  absl::Status Release(const std::string& name);

  // One new connection running `command` (default "ls"); the result carries smbclient's exit
  // code and output, e.g. "tree connect failed: NT_STATUS_ACCESS_DENIED".
  absl::StatusOr<agent::CommandResult> Connect(const std::string& share,
                                               const std::vector<std::string>& smbclient_options = {},
                                               const std::string& command = "ls");

  // Writes a managed include file by hand and reloads smbd (for setting up scenarios).
  absl::Status Configure(const Setup& setup);

 private:
  SambaLab() = default;
  absl::StatusOr<agent::CommandResult> Lab(const std::vector<std::string>& args);

  std::string dir_;
  int port_ = 0;
  std::map<std::string, std::string> env_;
  std::unique_ptr<agent::CommandRunner> runner_;
};

// "-mNT1 --option=client min protocol=NT1": what smbclient 4.17 needs to speak SMB1.
std::vector<std::string> Smb1ClientOptions();

}  // namespace smbfleet::testing

#endif  // SMBFLEET_TESTS_SAMBA_SAMBA_LAB_H_
