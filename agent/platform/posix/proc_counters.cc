#include "agent/platform/posix/proc_counters.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace smbfleet::agent::posix {
namespace {

// Small /proc files only (plain open and read: this runs for every process each sample); a read
// error is the file's name and errno.
bool ReadSmallFile(const std::string& path, std::string* out, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = absl::StrCat(path, ": ", std::strerror(errno));
    return false;
  }
  out->clear();
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = absl::StrCat(path, ": ", std::strerror(errno));
      close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};

// The first line of /proc/stat: "cpu  user nice system idle iowait irq softirq steal ...".
std::optional<CpuTimes> ParseProcStat(absl::string_view text, std::string* error) {
  absl::string_view line = text.substr(0, text.find('\n'));
  std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() < 5 || fields[0] != "cpu") {
    *error = "no 'cpu' line with at least 4 times first";
    return std::nullopt;
  }
  CpuTimes t;
  // user nice system idle iowait irq softirq steal; guest times are already in user and nice.
  for (size_t i = 1; i < fields.size() && i <= 8; ++i) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(fields[i], &v)) {
      *error = absl::StrCat("field ", i + 1, " of the cpu line is '", fields[i], "', not a number");
      return std::nullopt;
    }
    t.total += v;
    if (i != 4 && i != 5) t.busy += v;  // idle and iowait
  }
  return t;
}

// utime + stime and the start time of one /proc/<pid>/stat, when its comm starts with prefix.
// "pid (comm) state ppid ... utime(14) stime(15) ... starttime(22)"; comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
struct ProcTimes {
  bool matches = false;
  uint64_t ticks = 0;
  std::string start;
};

std::optional<ProcTimes> ParsePidStat(absl::string_view text, absl::string_view prefix,
                                      std::string* error) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    *error = "no (comm)";
    return std::nullopt;
  }
  ProcTimes p;
  p.matches = absl::StartsWith(text.substr(open + 1, close - open - 1), prefix);
  if (!p.matches) return p;
  std::vector<absl::string_view> rest =
      absl::StrSplit(absl::StripAsciiWhitespace(text.substr(close + 1)), ' ', absl::SkipEmpty());
  // rest[0] is field 3 (state): field n is rest[n - 3].
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (rest.size() < 20 || !absl::SimpleAtoi(rest[11], &utime) ||
      !absl::SimpleAtoi(rest[12], &stime)) {
    *error = "no utime and stime";
    return std::nullopt;
  }
  p.ticks = utime + stime;
  p.start = std::string(rest[19]);
  return p;
}

std::optional<uint64_t> ParseMemAvailable(absl::string_view text, std::string* error) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    uint64_t kib = 0;
    if (!absl::ConsumeSuffix(&line, "kB") ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) {
      *error = "MemAvailable is not '<number> kB'";
      return std::nullopt;
    }
    return kib * 1024;
  }
  *error = "no MemAvailable line";
  return std::nullopt;
}

class ProcCounterSource : public CounterSource {
 public:
  ProcCounterSource(ProcCountersOptions options, TcpStats* tcp_stats)
      : options_(std::move(options)), tcp_stats_(tcp_stats) {
    if (!options_.now) options_.now = [] { return std::chrono::steady_clock::now(); };
  }

  CounterReading Sample() override {
    CounterReading r;
    std::optional<uint64_t> total_ticks = SampleCpu(&r);
    SampleServerCpu(total_ticks, &r);
    SampleBytes(&r);
    SampleMemory(&r);
    return r;
  }

 private:
  std::string Path(absl::string_view rel) const { return absl::StrCat(options_.proc_root, rel); }

  // Returns the total jiffies since the last sample, for the server's share.
  std::optional<uint64_t> SampleCpu(CounterReading* r) {
    const std::string path = Path("/stat");
    std::string text;
    std::string error;
    std::optional<CpuTimes> t;
    if (ReadSmallFile(path, &text, &error)) {
      t = ParseProcStat(text, &error);
      if (!t) error = absl::StrCat(path, ": ", error);
    }
    if (!t) {
      r->errors.push_back(absl::StrCat("cpu_percent: ", error));
      busy_.Reset();
      total_.Reset();
      return std::nullopt;
    }
    std::optional<uint64_t> busy = busy_.Update(t->busy);
    std::optional<uint64_t> total = total_.Update(t->total);
    if (!busy || !total || *total == 0 || *busy > *total) return std::nullopt;
    r->sample.set_cpu_percent(100.0 * static_cast<double>(*busy) / static_cast<double>(*total));
    return total;
  }

  // The server's processes without reading every process's stat each sample: the pids listed
  // by the previous sample whose name did not match and that were already there the sample
  // before (so past a fork's exec) are not read again until the next whole scan. Read each
  // sample: every pid not listed last time, every server process known (its times, and whether
  // it is still the same process) and every pid that was new last time. A pid reused between two
  // samples by a server process, or a process that turned into one by an exec more than one
  // sample after its start, is seen at the next whole scan (options_.rescan_interval).
  void SampleServerCpu(std::optional<uint64_t> total_ticks, CounterReading* r) {
    std::vector<uint32_t> listed;
    if (!ListPids(&listed)) {
      r->errors.push_back(
          absl::StrCat("smb_cpu_percent: ", options_.proc_root, ": ", std::strerror(errno)));
      server_.Reset();
      ForgetProcesses();
      return;
    }
    const auto now = options_.now();
    const bool whole = !last_whole_scan_ || now - *last_whole_scan_ >= options_.rescan_interval;
    if (whole) last_whole_scan_ = now;
    std::map<std::string, uint64_t> ticks;
    std::set<uint32_t> servers;
    std::set<uint32_t> young;
    for (uint32_t pid : listed) {
      const bool is_new = !std::binary_search(listed_.begin(), listed_.end(), pid);
      if (!whole && !is_new && servers_.count(pid) == 0 && young_.count(pid) == 0) continue;
      std::string text;
      std::string error;
      const std::string path = Path(absl::StrCat("/", pid, "/stat"));
      // A process that exited since the listing has nothing to say: not an error.
      if (!ReadSmallFile(path, &text, &error)) continue;
      std::optional<ProcTimes> p = ParsePidStat(text, options_.server_comm_prefix, &error);
      if (!p) {
        r->errors.push_back(absl::StrCat("smb_cpu_percent: ", path, ": ", error));
        young.insert(pid);  // read again next time, as long as it cannot be parsed
        continue;
      }
      if (p->matches) {
        // The start time tells a reused pid from the process that had it before.
        ticks[absl::StrCat(pid, "/", p->start)] = p->ticks;
        servers.insert(pid);
      } else if (is_new) {
        young.insert(pid);
      }
    }
    listed_ = std::move(listed);
    servers_ = std::move(servers);
    young_ = std::move(young);
    std::optional<uint64_t> used = server_.Update(ticks);
    if (!used || !total_ticks || *total_ticks == 0) return;
    // Both in clock ticks (USER_HZ): the share of all cores' time since the last sample.
    r->sample.set_smb_cpu_percent(100.0 * static_cast<double>(*used) /
                                  static_cast<double>(*total_ticks));
  }

  // The pids under proc_root, ascending; false with errno when it cannot be listed.
  bool ListPids(std::vector<uint32_t>* pids) const {
    DIR* dir = opendir(options_.proc_root.c_str());
    if (dir == nullptr) return false;
    while (struct dirent* e = readdir(dir)) {
      uint32_t pid = 0;
      if (absl::SimpleAtoi(e->d_name, &pid)) pids->push_back(pid);
    }
    closedir(dir);
    std::sort(pids->begin(), pids->end());
    return true;
  }

  // The next sample reads every process again.
  void ForgetProcesses() {
    listed_.clear();
    servers_.clear();
    young_.clear();
    last_whole_scan_.reset();
  }

  void SampleBytes(CounterReading* r) {
    if (tcp_stats_ == nullptr) return;
    const auto now = options_.now();
    absl::StatusOr<std::vector<TcpConnection>> conns = tcp_stats_->Connections(options_.smb_ports);
    if (!conns.ok()) {
      r->errors.push_back(absl::StrCat("smb bytes per second: ", conns.status().message()));
      read_.Reset();
      write_.Reset();
      return;
    }
    std::map<std::string, uint64_t> sent;
    std::map<std::string, uint64_t> received;
    for (const TcpConnection& c : *conns) {
      if (!c.bytes_acked || !c.bytes_received) {
        r->errors.push_back(
            "smb bytes per second: the kernel's tcp_info has no bytes_acked/bytes_received");
        read_.Reset();
        write_.Reset();
        return;
      }
      const std::string key = absl::StrCat(c.local_address, ":", c.local_port, "-",
                                           c.remote_address, ":", c.remote_port, "#", c.inode);
      sent[key] = *c.bytes_acked;
      received[key] = *c.bytes_received;
    }
    std::optional<uint64_t> read = read_.Update(sent);
    std::optional<uint64_t> write = write_.Update(received);
    std::optional<std::chrono::steady_clock::time_point> last = last_bytes_at_;
    last_bytes_at_ = now;
    if (!last) return;
    const double seconds = std::chrono::duration<double>(now - *last).count();
    if (seconds <= 0) return;
    if (read) r->sample.set_smb_read_bytes_per_second(static_cast<double>(*read) / seconds);
    if (write) r->sample.set_smb_write_bytes_per_second(static_cast<double>(*write) / seconds);
  }

  void SampleMemory(CounterReading* r) {
    const std::string path = Path("/meminfo");
    std::string text;
    std::string error;
    std::optional<uint64_t> bytes;
    if (ReadSmallFile(path, &text, &error)) {
      bytes = ParseMemAvailable(text, &error);
      if (!bytes) error = absl::StrCat(path, ": ", error);
    }
    if (!bytes) {
      r->errors.push_back(absl::StrCat("available_memory_bytes: ", error));
      return;
    }
    r->sample.set_available_memory_bytes(*bytes);
  }

  ProcCountersOptions options_;
  TcpStats* tcp_stats_;
  Delta busy_;
  Delta total_;
  DeltaSum server_;
  std::vector<uint32_t> listed_;  // the pids of the previous sample, ascending
  std::set<uint32_t> servers_;    // of them, the server's processes
  std::set<uint32_t> young_;      // of them, the others that were new in that sample
  std::optional<std::chrono::steady_clock::time_point> last_whole_scan_;
  DeltaSum read_;
  DeltaSum write_;
  std::optional<std::chrono::steady_clock::time_point> last_bytes_at_;
};

}  // namespace

std::unique_ptr<CounterSource> NewProcCounterSource(ProcCountersOptions options,
                                                    TcpStats* tcp_stats) {
  return std::make_unique<ProcCounterSource>(std::move(options), tcp_stats);
}

}  // namespace smbfleet::agent::posix
