#include "agent/core/durable_file.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace smbfleet::agent {
namespace {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status SyncDir(const std::string& dir) { return SyncDirectory(dir); }

absl::Status StageFile(const std::string& path, absl::string_view content, int mode,
                       std::string* staged_path) {
  ASSIGN_OR_RETURN(
      *staged_path,
      WriteUniqueTempFile(absl::StrCat(DirName(path), "/.", BaseName(path), "."), content, mode));
  return absl::OkStatus();
}

absl::Status RenameDurably(const std::string& from, const std::string& to) {
  RETURN_IF_ERROR(RenameFile(from, to));
  return SyncDir(DirName(to));
}

absl::Status WriteFileDurably(const std::string& path, absl::string_view content, int mode) {
  std::string staged;
  RETURN_IF_ERROR(StageFile(path, content, mode, &staged));
  absl::Status s = RenameDurably(staged, path);
  if (!s.ok()) RemoveFile(staged).IgnoreError();
  return s;
}

}  // namespace smbfleet::agent
