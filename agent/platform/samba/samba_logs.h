#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_LOGS_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_LOGS_H_

// Refused sessions from smbd's own log files (`log file = .../log.%m`), as posture events.
// smbd logs at level 1 when it refuses a session or tree connect because encryption is required
// ("reject tcon with dialect[0x0210] as encryption is required for service finance"), and the
// auth audit lines ("Auth: ... status [NT_STATUS_WRONG_PASSWORD] ...") at level 2 and above.
// Refusals for signing or dialect are not logged at these levels, so their absence means nothing.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

// The file system boundary for log reading.
class LogFiles {
 public:
  virtual ~LogFiles() = default;
  // Regular files in `dir` whose name starts with `prefix` (full paths).
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& dir,
                                                        const std::string& prefix) = 0;
  // At most the last max_bytes of the file.
  virtual absl::StatusOr<std::string> ReadTail(const std::string& path, size_t max_bytes) = 0;
};

std::unique_ptr<LogFiles> NewPosixLogFiles();

// Events from one log file's text. `file_name` is the file's base name ("log.127.0.0.1"); the
// part after "log." is smbd's %m (client address or NetBIOS name). Lines that say nothing known
// are skipped; a torn first line (from reading a tail) is ignored.
std::vector<smbfleet::v1::Event> ParseSambaLog(absl::string_view text,
                                               const std::string& file_name);

struct LogLimits {
  size_t max_files = 64;
  size_t max_bytes_per_file = 256 << 10;
  size_t max_events = 200;
};

// Reads the logs named by testparm's `log file` value, keeps the newest max_events events in
// the posture and counts the rest in posture.events_dropped. Read failures are probe errors.
void CollectLogEvents(const std::string& log_file_param, LogFiles* files, const LogLimits& limits,
                      smbfleet::v1::Posture* posture);

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_LOGS_H_
