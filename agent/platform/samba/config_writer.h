#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_

// Writes Samba parameters into agent-managed include files and makes smbd load them safely:
//   MANAGED_DIR/posture.conf          included at the end of [global]
//   MANAGED_DIR/share-<name>.conf     included at the end of [<name>] (name lower-cased)
// A change is staged and checked as a whole configuration before any live file changes; each
// file then goes into place atomically (fsync'd temp file + rename), the previous version kept
// as <file>.prev, and smbd reloads. A candidate that `testparm` (or the caller's check of the
// effective values) rejects never reaches the live files: smbd re-reads changed include files by
// itself, and reloading an invalid value silently drops the share for new connections.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
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

// smb.conf text with each `include = P` line whose P is a key of `redirect` pointing at the
// mapped path instead; every other line as it was.
std::string RedirectIncludes(const std::string& conf,
                             const std::map<std::string, std::string>& redirect);

// A private folder (mkdtemp, 0700) removed with what it holds when this goes away.
class StagingDir {
 public:
  static absl::StatusOr<StagingDir> Create(const std::string& parent);
  // Removes a staging folder left behind (by a process killed mid-apply).
  static void Adopt(const std::string& path);
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&&) = delete;
  ~StagingDir();
  const std::string& path() const { return path_; }

 private:
  StagingDir() = default;
  std::string path_;
};

// One apply at a time: a process-wide mutex, then an exclusive flock on
// <managed_dir>/.smbfleet-apply.lock so that two agent processes do not interleave either.
class ApplyLock {
 public:
  static absl::StatusOr<std::unique_ptr<ApplyLock>> Acquire(const std::string& managed_dir);
  ~ApplyLock();

 private:
  ApplyLock() = default;
  static std::mutex process_mu_;
  std::unique_lock<std::mutex> held_;
  int fd_ = -1;
};

// Removes staging folders and temp files a killed apply left in managed_dir. Call with the
// ApplyLock held, so that no apply is staging at the time.
void RemoveStagingLeftovers(const std::string& managed_dir);

// A write renames its files into place one by one; while it does, managed_dir holds
// .smbfleet-apply.pending naming them. A kill -9 between two renames leaves some files new and
// some old: this puts every file of that set back byte for byte (from its .prev, or removes a
// file that did not exist) and returns true; false when no write was interrupted. Call with the
// ApplyLock held, before reading the current values.
absl::StatusOr<bool> RestoreInterruptedWrite(const std::string& managed_dir);
std::string PendingWritePath(const std::string& managed_dir);

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

  // The candidate files and a copy of smb.conf that includes them are staged in a private folder
  // and checked there (testparm, then `verify`); only then are the live files replaced (one
  // rename each, in path order, previous versions kept as .prev) and smbd reloaded.
  // Errors: InvalidArgument (a parameter or value refused; nothing written), Aborted (testparm
  // or `verify` rejected the candidate; live files untouched, smbd untouched), Unavailable (smbd
  // did not take reload-config; files restored), Internal (a file could not be written or
  // restored).
  absl::StatusOr<WriteResult> Write(const std::vector<ParameterChange>& changes,
                                    const Verify& verify = nullptr);

  // Reads and parses `testparm -s -v`; FailedPrecondition when testparm rejects the file.
  absl::StatusOr<TestparmConfig> ReadConfig();

  const std::string& managed_dir() const { return managed_dir_; }

 private:
  absl::StatusOr<TestparmConfig> ReadConfigOf(const SambaOptions& options);

  SambaOptions options_;
  std::string managed_dir_;
  CommandRunner* runner_;
};

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_CONFIG_WRITER_H_
