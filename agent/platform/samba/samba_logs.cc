#include "agent/platform/samba/samba_logs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "agent/platform/samba/probe_errors.h"

namespace smbfleet::agent::samba {
namespace {

constexpr size_t kMaxMessageBytes = 512;

class PosixLogFiles : public LogFiles {
 public:
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir,
                                                const std::string& prefix) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      std::string msg = absl::StrCat(dir, ": cannot list: ", std::strerror(errno));
      return errno == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
    }
    std::vector<std::string> out;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (!absl::StartsWith(name, prefix)) continue;
      std::string path = absl::StrCat(dir, "/", name);
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(path);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }

  absl::StatusOr<std::string> ReadTail(const std::string& path, size_t max_bytes) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
    }
    off_t start = st.st_size > static_cast<off_t>(max_bytes) ? st.st_size - max_bytes : 0;
    std::string out(static_cast<size_t>(st.st_size - start), '\0');
    ssize_t n = ::pread(fd, out.data(), out.size(), start);
    ::close(fd);
    if (n < 0) return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
    out.resize(static_cast<size_t>(n));
    return out;
  }
};

// "... [value] ..." after `key`; empty when absent.
std::string Bracketed(absl::string_view line, absl::string_view key) {
  size_t at = line.find(key);
  if (at == absl::string_view::npos) return "";
  size_t open = at + key.size();
  size_t close = line.find(']', open);
  if (close == absl::string_view::npos) return "";
  return std::string(line.substr(open, close - open));
}

std::string AddressOf(absl::string_view remote) {
  if (!absl::ConsumePrefix(&remote, "ipv4:") && !absl::ConsumePrefix(&remote, "ipv6:")) {
    return std::string(remote);
  }
  size_t colon = remote.rfind(':');
  return std::string(colon == absl::string_view::npos ? remote : remote.substr(0, colon));
}

std::string Printable(absl::string_view s) {
  std::string out;
  for (char c : s.substr(0, kMaxMessageBytes)) {
    out.push_back(absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : '?');
  }
  return out;
}

uint64_t Fnv1a(absl::string_view a, absl::string_view b) {
  uint64_t h = 1469598103934665603ull;
  for (absl::string_view s : {a, absl::string_view("\n"), b}) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  return h;
}

// "[2026/12/02 16:19:41.429035,  1] file.c:327(fn)" -> time and debug level.
bool ParseHeader(absl::string_view line, absl::Time* time, int* level) {
  if (!absl::ConsumePrefix(&line, "[")) return false;
  size_t close = line.find(']');
  if (close == absl::string_view::npos) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(line.substr(0, close), ',');
  if (parts.size() < 2) return false;
  std::string err;
  if (!absl::ParseTime("%Y/%m/%d %H:%M:%E*S", std::string(parts[0]), absl::LocalTimeZone(), time,
                       &err)) {
    return false;
  }
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(parts[1]), level);
}

v1::EventLevel LevelOf(int debug_level) {
  if (debug_level <= 0) return v1::EVENT_LEVEL_ERROR;
  if (debug_level == 1) return v1::EVENT_LEVEL_WARNING;
  return v1::EVENT_LEVEL_INFORMATION;
}

// Fills `e` from one message line; false when the line means nothing known.
bool Classify(absl::string_view msg, v1::Event* e) {
  if (absl::StrContains(msg, "encryption is required") ||
      absl::StrContains(msg, "requires encryption")) {
    e->set_kind("client_no_encryption");
    std::string dialect = Bracketed(msg, "dialect[");
    if (!dialect.empty()) (*e->mutable_data())["dialect"] = dialect;
    size_t svc = msg.find("for service ");
    if (svc != absl::string_view::npos) {
      e->set_share_name(std::string(absl::StripAsciiWhitespace(msg.substr(svc + 12))));
    } else {
      e->set_share_name(Bracketed(msg, "service["));
    }
    if (absl::StrContains(msg, "guest session")) (*e->mutable_data())["guest"] = "true";
    return true;
  }
  if (absl::StartsWith(msg, "Auth: [")) {
    std::string status = Bracketed(msg, " status [");
    if (status.empty() || status == "NT_STATUS_OK") return false;
    e->set_status(status);
    std::string domain = Bracketed(msg, " user [");
    size_t user_at = msg.find("]\\[");
    std::string user =
        user_at == absl::string_view::npos ? "" : Bracketed(msg.substr(user_at), "]\\[");
    e->set_user(domain.empty() ? user : absl::StrCat(domain, "\\", user));
    std::string remote = Bracketed(msg, " remote host [");
    if (!remote.empty()) e->set_client_address(AddressOf(remote));
    std::string workstation = Bracketed(msg, " workstation [");
    if (!workstation.empty()) e->set_client_name(workstation);
    (*e->mutable_data())["protocol"] = Bracketed(msg, "Auth: [");
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<LogFiles> NewPosixLogFiles() { return std::make_unique<PosixLogFiles>(); }

std::vector<v1::Event> ParseSambaLog(absl::string_view text, const std::string& file_name) {
  std::vector<v1::Event> out;
  absl::string_view machine = file_name;
  absl::ConsumePrefix(&machine, "log.");
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    absl::Time time;
    int level = 0;
    if (!ParseHeader(lines[i], &time, &level)) continue;
    absl::string_view msg = absl::StripAsciiWhitespace(lines[i + 1]);
    v1::Event e;
    if (!Classify(msg, &e)) continue;
    int64_t micros = absl::ToUnixMicros(time);
    e.mutable_time()->set_seconds(micros / 1000000);
    e.mutable_time()->set_nanos(static_cast<int32_t>((micros % 1000000) * 1000));
    e.set_level(LevelOf(level));
    e.set_provider("smbd");
    e.set_channel(absl::StrCat("samba:", file_name));
    e.set_message(Printable(msg));
    e.set_record_id(Fnv1a(file_name, lines[i]) >> 1);  // stable across reports, for dedupe
    if (e.client_address().empty() && e.client_name().empty() && machine != "smbd" &&
        !machine.empty()) {
      e.set_client_name(std::string(machine));
    }
    out.push_back(std::move(e));
    ++i;
  }
  return out;
}

void CollectLogEvents(const std::string& log_file_param, LogFiles* files, const LogLimits& limits,
                      v1::Posture* posture) {
  if (log_file_param.empty()) return;  // smbd's built-in default: not known here
  size_t slash = log_file_param.rfind('/');
  if (slash == std::string::npos) return;
  std::string dir = log_file_param.substr(0, slash);
  std::string base = log_file_param.substr(slash + 1);
  size_t macro = base.find('%');
  std::string prefix = macro == std::string::npos ? base : base.substr(0, macro);
  absl::StatusOr<std::vector<std::string>> paths = files->List(dir, prefix);
  if (absl::IsNotFound(paths.status())) return;  // nothing logged yet
  if (!paths.ok()) {
    AddProbeError(posture, kSambaLogProbe, ProbeCodeOf(paths.status()), paths.status().message());
    return;
  }
  if (macro == std::string::npos) {
    paths->erase(std::remove_if(paths->begin(), paths->end(),
                                [&](const std::string& p) { return p != log_file_param; }),
                 paths->end());
  }
  if (paths->size() > limits.max_files) {
    AddProbeError(
        posture, kSambaLogProbe, "LIMIT",
        absl::StrCat(dir, ": ", paths->size(), " log files, read the first ", limits.max_files));
    paths->resize(limits.max_files);
  }
  std::vector<v1::Event> events;
  for (const std::string& path : *paths) {
    absl::StatusOr<std::string> text = files->ReadTail(path, limits.max_bytes_per_file);
    if (!text.ok()) {
      AddProbeError(posture, kSambaLogProbe, ProbeCodeOf(text.status()), text.status().message());
      continue;
    }
    std::vector<v1::Event> more = ParseSambaLog(*text, path.substr(path.rfind('/') + 1));
    std::move(more.begin(), more.end(), std::back_inserter(events));
  }
  auto newer = [](const v1::Event& a, const v1::Event& b) {
    if (a.time().seconds() != b.time().seconds()) return a.time().seconds() > b.time().seconds();
    return a.time().nanos() > b.time().nanos();
  };
  std::stable_sort(events.begin(), events.end(), newer);
  if (events.size() > limits.max_events) {
    posture->set_events_dropped(posture->events_dropped() + events.size() - limits.max_events);
    events.resize(limits.max_events);
  }
  for (auto it = events.rbegin(); it != events.rend(); ++it) *posture->add_events() = *it;
}

}  // namespace smbfleet::agent::samba
