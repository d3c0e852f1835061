#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SMBSTATUS_PARSER_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SMBSTATUS_PARSER_H_

// `smbstatus --json` (Samba 4.16+): sessions, tree connects (tcons) and open files.
//
// Degrees are observed traffic, not configuration: `full` = every request so far was signed
// (encrypted), `partial` = some were, `none` = none. A session's own degree counts its session
// setup, so an SMB3 session that is not required to sign shows signing `partial` while its tree
// connects show `none`. Shares are therefore judged by their tcon entries, and
// Session.signing/encryption summarise the session's tree connects (the session's own degree
// only when it has none).

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

struct SmbStatus {
  std::string version;  // "4.17.12-Debian"
  std::vector<smbfleet::v1::Session> sessions;
  std::vector<smbfleet::v1::OpenFile> open_files;
};

// share_paths: share name -> path (from testparm), used to name the share an open file is on.
// Fails naming the input and the element on malformed JSON, on a non-object where an object is
// required, and on input over 64 MiB. Unknown fields are ignored (newer Samba adds some).
absl::StatusOr<SmbStatus> ParseSmbStatusJson(
    absl::string_view json, const std::map<std::string, std::string>& share_paths = {});

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SMBSTATUS_PARSER_H_
