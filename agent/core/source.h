#ifndef SMBFLEET_AGENT_CORE_SOURCE_H_
#define SMBFLEET_AGENT_CORE_SOURCE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent {

// Where a posture comes from: a live platform (Samba, Windows) or a capture folder.
class PostureSource {
 public:
  virtual ~PostureSource() = default;

  // Collects one posture. A failed probe (one command, one file) is data: it goes into
  // posture.probe_errors and the rest is still collected. An error return means nothing at
  // all could be collected (e.g. the smb.conf path does not exist).
  virtual absl::StatusOr<smbfleet::v1::Posture> Collect() = 0;

  // The agent calls this once the report holding the last Collect()'s posture is durable in the
  // spool. State that marks data as reported (the Windows event bookmark) advances only here, so
  // that a failed spool write, or a kill between Collect and the spool, reads the same data
  // again next time instead of losing it.
  virtual absl::Status CommitCollected() { return absl::OkStatus(); }

  // "samba:/etc/samba/smb.conf", "windows-capture:/tmp/cap", ...
  virtual std::string Describe() const = 0;
};

// What a live source needs from the agent.
struct SourceContext {
  CommandRunner* runner = nullptr;              // not owned
  std::map<std::string, std::string> tool_env;  // for smbstatus/testparm (e.g. nss_wrapper)
  std::string state_dir;                        // for bookmarks
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_SOURCE_H_
