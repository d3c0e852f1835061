#include "agent/core/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace smbfleet::agent {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path, int err) {
  return absl::InternalError(absl::StrCat(path, ": ", what, ": ", std::strerror(err)));
}

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
  std::string tmpl = absl::StrCat(DirName(path), "/.", BaseName(path), ".XXXXXX");
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) return Errno("cannot create a temp file", tmpl, errno);
  std::string tmp(buf.data());
  auto fail = [&](absl::string_view what, int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return Errno(what, tmp, err);
  };
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) return fail("cannot chmod", errno);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write", errno);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot fsync", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Errno("cannot close", tmp, err);
  }
  *staged_path = tmp;
  return absl::OkStatus();
}

absl::Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return Errno(absl::StrCat("cannot rename ", from, " into place"), to, errno);
  }
  return SyncDir(DirName(to));
}

absl::Status WriteFileDurably(const std::string& path, absl::string_view content, int mode) {
  std::string staged;
  RETURN_IF_ERROR(StageFile(path, content, mode, &staged));
  absl::Status s = RenameDurably(staged, path);
  if (!s.ok()) ::unlink(staged.c_str());
  return s;
}

}  // namespace smbfleet::agent
