#include "agent/platform/samba/config_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/core/durable_file.h"
#include "agent/platform/samba/probe_errors.h"
#include "agent/platform/samba/samba_names.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace smbfleet::agent::samba {
namespace {

constexpr char kHeader[] =
    "# Managed by smbfleet-agent: changes are written here, checked with testparm and loaded\n"
    "# with smbcontrol reload-config. The previous version is kept next to it as .prev.\n";

constexpr size_t kMaxValueBytes = 256;

// Samba spells some parameters two ways; a managed file keeps one line per parameter.
std::string Canonical(const std::string& parameter) {
  std::string p = absl::AsciiStrToLower(absl::StripAsciiWhitespace(parameter));
  if (p == "smb encrypt") return "server smb encrypt";
  return p;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

struct FileState {
  bool existed = false;
  std::string old_content;
  std::string new_content;
};

// Replaces (or removes) the changed parameters' lines, keeping everything else in the file.
std::string Rewrite(const std::string& old_content,
                    const std::vector<const ParameterChange*>& changes) {
  std::set<std::string> changed;
  for (const ParameterChange* c : changes) changed.insert(Canonical(c->parameter));
  std::vector<std::string> lines;
  bool has_header = false;
  for (absl::string_view line : absl::StrSplit(old_content, '\n', absl::SkipEmpty())) {
    absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (absl::StartsWith(stripped, "# Managed by smbfleet-agent")) has_header = true;
    size_t eq = stripped.find('=');
    if (eq != absl::string_view::npos && stripped.front() != '#' && stripped.front() != ';' &&
        changed.count(Canonical(std::string(stripped.substr(0, eq)))) > 0) {
      continue;
    }
    lines.emplace_back(line);
  }
  std::string out = has_header ? "" : kHeader;
  for (const std::string& l : lines) absl::StrAppend(&out, l, "\n");
  for (const ParameterChange* c : changes) {
    if (c->value.has_value()) absl::StrAppend(&out, "    ", c->parameter, " = ", *c->value, "\n");
  }
  return out;
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat(path, ": cannot remove: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status ClearPending(const std::string& managed_dir) {
  RETURN_IF_ERROR(RemoveFile(PendingWritePath(managed_dir)));
  return SyncDir(managed_dir);
}

}  // namespace

std::string RedirectIncludes(const std::string& conf,
                             const std::map<std::string, std::string>& redirect) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(conf, '\n')) {
    absl::string_view stripped = absl::StripAsciiWhitespace(line);
    size_t eq = stripped.find('=');
    if (eq != absl::string_view::npos && !stripped.empty() && stripped.front() != '#' &&
        stripped.front() != ';' &&
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(stripped.substr(0, eq))) == "include") {
      auto it = redirect.find(std::string(absl::StripAsciiWhitespace(stripped.substr(eq + 1))));
      if (it != redirect.end()) {
        absl::StrAppend(&out, "include = ", it->second, "\n");
        continue;
      }
    }
    absl::StrAppend(&out, line, "\n");
  }
  if (!conf.empty() && conf.back() == '\n') out.pop_back();  // split left an empty last piece
  return out;
}

absl::StatusOr<StagingDir> StagingDir::Create(const std::string& parent) {
  std::string tmpl = parent + "/.stage-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat(tmpl, ": cannot create a staging folder: ", std::strerror(errno)));
  }
  StagingDir d;
  d.path_ = buf.data();
  return d;
}

void StagingDir::Adopt(const std::string& path) {
  StagingDir d;
  d.path_ = path;
}

StagingDir::StagingDir(StagingDir&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

StagingDir::~StagingDir() {
  if (path_.empty()) return;
  if (DIR* d = ::opendir(path_.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((path_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path_.c_str());
}

std::mutex ApplyLock::process_mu_;

absl::StatusOr<std::unique_ptr<ApplyLock>> ApplyLock::Acquire(const std::string& managed_dir) {
  std::unique_ptr<ApplyLock> lock(new ApplyLock());
  lock->held_ = std::unique_lock<std::mutex>(process_mu_);
  RETURN_IF_ERROR(MakeDirs(managed_dir));
  std::string path = managed_dir + "/.smbfleet-apply.lock";
  lock->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock->fd_ < 0) {
    return absl::InternalError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  while (::flock(lock->fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      return absl::InternalError(absl::StrCat(path, ": cannot lock: ", std::strerror(errno)));
    }
  }
  return lock;
}

void RemoveStagingLeftovers(const std::string& managed_dir) {
  DIR* d = ::opendir(managed_dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : names) {
    std::string path = managed_dir + "/" + name;
    if (absl::StartsWith(name, ".stage-")) {
      StagingDir::Adopt(path);  // removes it
    } else if (name.size() > 7 && name[0] == '.' && name[name.size() - 7] == '.' &&
               (absl::StartsWith(name, ".posture.conf.") || absl::StartsWith(name, ".share-"))) {
      ::unlink(path.c_str());  // a temp file of WriteFileDurably (".NAME.XXXXXX")
    }
  }
}

// One line "<0|1> <path>" per file being renamed into place, 1 when the file existed (its
// previous content is then in <path>.prev).
std::string PendingWritePath(const std::string& managed_dir) {
  return managed_dir + "/.smbfleet-apply.pending";
}

absl::StatusOr<bool> RestoreInterruptedWrite(const std::string& managed_dir) {
  const std::string pending = PendingWritePath(managed_dir);
  absl::StatusOr<std::string> text = ReadFile(pending, 1 << 20);
  if (absl::IsNotFound(text.status())) return false;
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    const bool existed = absl::StartsWith(line, "1 ");
    if (!existed && !absl::StartsWith(line, "0 ")) {
      return absl::DataLossError(
          absl::StrCat(pending, ": line '", absl::CHexEscape(line), "' is not '<0|1> <path>'"));
    }
    const std::string path(line.substr(2));
    // Only the managed files themselves: the record cannot point a restore anywhere else.
    if (!absl::StartsWith(path, managed_dir + "/") ||
        path.find('/', managed_dir.size() + 1) != std::string::npos) {
      return absl::DataLossError(
          absl::StrCat(pending, ": '", absl::CHexEscape(path), "' is not in ", managed_dir));
    }
    if (existed) {
      ASSIGN_OR_RETURN(std::string previous, ReadFile(path + ".prev", 1 << 20));
      RETURN_IF_ERROR(WriteFileDurably(path, previous));
    } else {
      RETURN_IF_ERROR(RemoveFile(path));
    }
  }
  RETURN_IF_ERROR(ClearPending(managed_dir));
  return true;
}

ApplyLock::~ApplyLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

bool IsWritableParameter(const std::string& parameter, bool share_scope) {
  static const std::set<std::string>* kGlobal =
      new std::set<std::string>{"server signing", "server smb encrypt", "server min protocol",
                                "client signing", "client smb encrypt", "client min protocol"};
  static const std::set<std::string>* kShare = new std::set<std::string>{"server smb encrypt"};
  return (share_scope ? kShare : kGlobal)->count(Canonical(parameter)) > 0;
}

absl::Status ValidateParameterValue(const std::string& parameter, const std::string& value) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(parameter, ": value is empty"));
  }
  if (value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(parameter, ": value is ", value.size(), " bytes, limit ", kMaxValueBytes));
  }
  static constexpr absl::string_view kForbidden = "[]#;=\\";
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c >= 0x7f || kForbidden.find(static_cast<char>(c)) != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          parameter, ": value '", absl::CHexEscape(value), "' has a forbidden character at offset ",
          i, " (one printable line without [ ] # ; = or backslash)"));
    }
  }
  if (value.front() == ' ' || value.back() == ' ') {
    return absl::InvalidArgumentError(
        absl::StrCat(parameter, ": value has leading or trailing space"));
  }
  return absl::OkStatus();
}

SambaConfigWriter::SambaConfigWriter(SambaOptions options, std::string managed_dir,
                                     CommandRunner* runner)
    : options_(std::move(options)), managed_dir_(std::move(managed_dir)), runner_(runner) {
  if (managed_dir_.empty()) managed_dir_ = DirOf(options_.smb_conf) + "/conf.d";
}

std::string SambaConfigWriter::GlobalFile() const { return managed_dir_ + "/posture.conf"; }

std::string SambaConfigWriter::ShareFile(const std::string& share) const {
  return absl::StrCat(managed_dir_, "/share-", absl::AsciiStrToLower(share), ".conf");
}

absl::StatusOr<TestparmConfig> SambaConfigWriter::ReadConfig() { return ReadConfigOf(options_); }

absl::StatusOr<TestparmConfig> SambaConfigWriter::ReadConfigOf(const SambaOptions& options) {
  Command command = TestparmDumpCommand(options);
  absl::StatusOr<CommandResult> result = runner_->Run(command);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(DescribeCommand(command), ": ", result.status().message()));
  }
  if (result->exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("testparm rejects ", options.smb_conf,
                                                      " (exit ", result->exit_code,
                                                      "): ", ToolMessage(*result)));
  }
  return TestparmConfig::Parse(result->stdout_data);
}

absl::StatusOr<WriteResult> SambaConfigWriter::Write(const std::vector<ParameterChange>& changes,
                                                     const Verify& verify) {
  std::map<std::string, std::vector<const ParameterChange*>> by_file;
  for (const ParameterChange& c : changes) {
    if (!c.share.empty()) {
      if (absl::Status s = ValidateShareName(c.share); !s.ok()) return s;
    }
    if (!IsWritableParameter(c.parameter, !c.share.empty())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", absl::CHexEscape(c.parameter), "' is not a parameter the agent writes in ",
          c.share.empty() ? "[global]" : absl::StrCat("[", c.share, "]")));
    }
    if (c.value.has_value()) {
      if (absl::Status s = ValidateParameterValue(c.parameter, *c.value); !s.ok()) return s;
    }
    by_file[c.share.empty() ? GlobalFile() : ShareFile(c.share)].push_back(&c);
  }

  WriteResult result;
  RETURN_IF_ERROR(MakeDirs(managed_dir_));
  std::map<std::string, FileState> files;
  for (const auto& [path, file_changes] : by_file) {
    FileState state;
    absl::StatusOr<std::string> old = ReadFile(path, 1 << 20);
    if (old.ok()) {
      state.existed = true;
      state.old_content = *std::move(old);
    } else if (!absl::IsNotFound(old.status())) {
      return old.status();
    }
    state.new_content = Rewrite(state.old_content, file_changes);
    if (state.existed && state.new_content == state.old_content) continue;
    files[path] = std::move(state);
  }

  if (files.empty()) {
    result.actions.push_back("no file changed");
    return result;
  }

  auto restore = [&]() -> absl::Status {
    absl::Status first;
    for (const auto& [path, state] : files) {
      absl::Status s = state.existed ? WriteFileDurably(path, state.old_content) : RemoveFile(path);
      if (!s.ok() && first.ok()) first = s;
    }
    return first;
  };
  auto restored = [&](absl::StatusCode code, const std::string& why) -> absl::Status {
    absl::Status r = restore();
    if (!r.ok()) {
      return absl::InternalError(
          absl::StrCat(why, "; restoring the previous files failed: ", r.message()));
    }
    std::vector<std::string> paths;
    for (const auto& [path, state] : files) paths.push_back(path);
    return absl::Status(code, absl::StrCat(why, "; restored ", absl::StrJoin(paths, ", ")));
  };

  // 1. The candidate: the changed files and a copy of smb.conf whose include lines point at them,
  //    in a private folder beside the managed files (same file system: renamed into place later).
  //    smbd re-reads changed include files by itself, so nothing live changes before testparm.
  ASSIGN_OR_RETURN(StagingDir stage, StagingDir::Create(managed_dir_));
  std::map<std::string, std::string> staged;  // live path -> candidate path
  for (const auto& [path, state] : files) {
    std::string candidate = absl::StrCat(stage.path(), "/", path.substr(path.rfind('/') + 1));
    RETURN_IF_ERROR(WriteFileDurably(candidate, state.new_content));
    staged[path] = candidate;
  }
  ASSIGN_OR_RETURN(std::string conf, ReadFile(options_.smb_conf, 4 << 20));
  SambaOptions candidate_options = options_;
  candidate_options.smb_conf = stage.path() + "/smb.conf";
  RETURN_IF_ERROR(WriteFileDurably(candidate_options.smb_conf, RedirectIncludes(conf, staged)));
  absl::StatusOr<TestparmConfig> config = ReadConfigOf(candidate_options);
  constexpr absl::string_view kKept =
      "; previous configuration kept (live files untouched, nothing needed to be restored)";
  if (!config.ok()) {
    return absl::AbortedError(
        absl::StrCat("new configuration not loaded: ", config.status().message(), kKept));
  }
  if (verify) {
    if (absl::Status s = verify(*config); !s.ok()) {
      return absl::AbortedError(absl::StrCat("new configuration not loaded: ", s.message(), kKept));
    }
  }
  result.actions.push_back(
      absl::StrCat("testparm accepted the candidate configuration of ", options_.smb_conf));

  // 2. Into place: previous versions kept as .prev, then one rename per file in path order. A
  //    failed rename puts every previous file back, so the set lands whole or not at all.
  for (const auto& [path, state] : files) {
    if (!state.existed) continue;
    if (absl::Status s = WriteFileDurably(path + ".prev", state.old_content); !s.ok()) {
      return absl::InternalError(absl::StrCat(s.message(), "; live files untouched"));
    }
  }
  //    The set is recorded first, so that a kill between two renames is undone at the next
  //    read or apply (RestoreInterruptedWrite), byte for byte.
  std::string pending;
  for (const auto& [path, state] : files)
    absl::StrAppend(&pending, state.existed ? 1 : 0, " ", path, "\n");
  if (absl::Status s = WriteFileDurably(PendingWritePath(managed_dir_), pending); !s.ok()) {
    return absl::InternalError(absl::StrCat(s.message(), "; live files untouched"));
  }
  for (const auto& [path, state] : files) {
    if (absl::Status s = RenameDurably(staged[path], path); !s.ok()) {
      absl::Status r = restored(absl::StatusCode::kInternal, std::string(s.message()));
      // Put back whole: the record is done with. If not, it stays for the next read to finish.
      if (absl::StrContains(r.message(), "; restored ")) ClearPending(managed_dir_).IgnoreError();
      return r;
    }
    result.files_changed.push_back(path);
    result.actions.push_back(absl::StrCat("wrote ", path));
  }
  RETURN_IF_ERROR(ClearPending(managed_dir_));

  Command reload;
  reload.argv = {options_.smbcontrol, "-s", options_.smb_conf, "--", "smbd", "reload-config"};
  reload.env = options_.env;
  reload.timeout = options_.timeout;
  absl::StatusOr<CommandResult> r = runner_->Run(reload);
  if (!r.ok() || r->exit_code != 0) {
    std::string why = r.ok() ? absl::StrCat("exit ", r->exit_code, ": ", ToolMessage(*r))
                             : std::string(r.status().message());
    return restored(absl::StatusCode::kUnavailable,
                    absl::StrCat(DescribeCommand(reload), " failed (", why, ")"));
  }
  result.actions.push_back(absl::StrCat(DescribeCommand(reload)));
  return result;
}

}  // namespace smbfleet::agent::samba
