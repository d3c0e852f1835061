#ifndef SMBFLEET_AGENT_CORE_DURABLE_FILE_H_
#define SMBFLEET_AGENT_CORE_DURABLE_FILE_H_

// Files that must survive a crash or a power cut exactly as last written: the change journal and
// the Samba include files. A temp file with a unique name (mkstemp) in the same directory is
// written, fsync'd, renamed over the target, and the directory fsync'd, so that a reader sees the
// old content or the new one, and two writers of one path never share a temp file.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace smbfleet::agent {

// The temp file is "<dir>/.<name>.XXXXXX"; on error it is removed and the target left alone.
absl::Status WriteFileDurably(const std::string& path, absl::string_view content, int mode = 0644);

// Writes the temp file only (written and fsync'd, not renamed); returns its path. For a set of
// files that must all be staged before any of them is renamed into place.
absl::Status StageFile(const std::string& path, absl::string_view content, int mode,
                       std::string* staged_path);

// rename(from, to) then fsync of to's directory.
absl::Status RenameDurably(const std::string& from, const std::string& to);

// fsync of a directory, so that a rename or unlink in it is on disk.
absl::Status SyncDir(const std::string& dir);

std::string DirName(const std::string& path);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_DURABLE_FILE_H_
