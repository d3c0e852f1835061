#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_

// Writes Samba parameters into agent-managed include files and makes smbd load them safely:
//   MANAGED_DIR/posture.conf          included at the end of [global]
//   MANAGED_DIR/share-<name>.conf     included at the end of [<name>] (name lower-cased)
// Each write is atomic (temp file + rename) and keeps the previous version as <file>.prev. The
// new configuration must pass `testparm` (and the caller's check of the effective values)
// before `smbcontrol smbd reload-config`; otherwise every file is restored and smbd is not
// touched: smbd reloading an invalid value silently drops the share for new connections.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/platform/samba/samba_source.h"
#include "agent/platform/samba/testparm_parser.h"

namespace smbfleet::agent::samba {

struct ParameterChange {
  std::string share;                 // empty = [global]
  std::string parameter;             // e.g. "server signing"
  std::optional<std::string> value;  // nullopt removes the parameter from the managed file
};

// The Samba parameters the agent ever writes. Anything else is refused.
bool IsWritableParameter(const std::string& parameter, bool share_scope);

// A value is one line of printable ASCII without [ ] # ; or '=' (so it cannot open a section,
// start a comment or smuggle a second parameter such as `include =`), at most 256 bytes.
absl::Status ValidateParameterValue(const std::string& parameter, const std::string& value);

struct WriteResult {
  std::vector<std::string> files_changed;  // paths written
  std::vector<std::string> actions;        // human-readable steps taken, for the change ack
};

class SambaConfigWriter {
 public:
  // managed_dir empty = "<directory of smb_conf>/conf.d".
  SambaConfigWriter(SambaOptions options, std::string managed_dir, CommandRunner* runner);

  std::string GlobalFile() const;
  std::string ShareFile(const std::string& share) const;

  // Checks the effective configuration after the files are written and before smbd reloads.
  using Verify = std::function<absl::Status(const TestparmConfig&)>;

  // Errors: InvalidArgument (a parameter or value refused; nothing written), Aborted (testparm
  // or `verify` rejected the result; files restored, smbd untouched), Unavailable (smbd did not
  // take reload-config; files restored), Internal (a file could not be written or restored).
  absl::StatusOr<WriteResult> Write(const std::vector<ParameterChange>& changes,
                                    const Verify& verify = nullptr);

  // Reads and parses `testparm -s -v`; FailedPrecondition when testparm rejects the file.
  absl::StatusOr<TestparmConfig> ReadConfig();

 private:
  SambaOptions options_;
  std::string managed_dir_;
  CommandRunner* runner_;
};

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_
