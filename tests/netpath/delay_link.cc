// smbfleet-delay-link: a userspace network link with delay and an optional rate cap, for tests
// that need a real round trip between two network namespaces (this kernel has no `tc netem`).
//
//   smbfleet-delay-link --dev_a=NAME --dev_b=NAME [--netns_a=NS] [--netns_b=NS]
//                       [--delay_ms_ab=MS] [--delay_ms_ba=MS] [--rate_mbit=MBIT]
//                       [--queue_packets=N] [--max_seconds=S] [--stats=FILE]
//
// Creates two TAP devices (Ethernet frames, no packet info header), each in the namespace
// /run/netns/NS when --netns_* names one, and forwards every frame read from one to the other:
// A->B after --delay_ms_ab, B->A after --delay_ms_ba (fractional, microsecond resolution). With
// --rate_mbit, each direction is a line of that rate: a frame occupies it for
// (frame + 24 bytes of preamble, FCS and inter-frame gap) x 8 / rate, so 1000 behaves like
// Gigabit Ethernet, and frames wait in a queue of --queue_packets behind it (drop tail). Without
// a rate cap, --queue_packets bounds the frames on the delay line. Drops are counted.
//
// The devices are up-to-the-caller: addresses, MTU (1500, or up to 65521) and `up` are set with
// `ip`. They
// vanish when the program exits: on SIGTERM/SIGINT, or after --max_seconds (default 600).
// It prints "ready" on stdout once both devices exist. --stats writes JSON counters at exit.
// The process sleeps until the next frame is due or a device is readable (no busy polling).

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

// Ethernet preamble + start delimiter (8), FCS (4) and inter-frame gap (12): what a frame costs
// on a real line beyond the bytes a TAP device hands over.
constexpr int64_t kLineOverheadBytes = 24;
// Larger than any frame of a device of the largest MTU `ip` lets a TAP device have (65521, plus
// the 14-byte Ethernet header), so that jumbo frames (MTU 9000) pass as well as 1500.
constexpr size_t kMaxFrameBytes = 65536;
// Frames taken from one device per wakeup before the other gets its turn.
constexpr int kReadBurst = 64;

int64_t NowNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Options {
  std::string dev_a;
  std::string dev_b;
  std::string netns_a;
  std::string netns_b;
  double delay_ms_ab = 0;
  double delay_ms_ba = 0;
  double rate_mbit = 0;
  int64_t queue_packets = 8192;
  double max_seconds = 600;
  std::string stats;
};

void Usage() {
  std::fprintf(stderr,
               "usage: smbfleet-delay-link --dev_a=NAME --dev_b=NAME [--netns_a=NS] "
               "[--netns_b=NS] [--delay_ms_ab=MS] [--delay_ms_ba=MS] [--rate_mbit=MBIT] "
               "[--queue_packets=N] [--max_seconds=S] [--stats=FILE]\n");
}

std::optional<double> ParseNumber(const std::string& flag, const std::string& text, double low,
                                  double high) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0' || !(value >= low) ||
      !(value <= high)) {
    std::fprintf(stderr, "smbfleet-delay-link: --%s: '%s' is not a number in [%g, %g]\n",
                 flag.c_str(), text.c_str(), low, high);
    return std::nullopt;
  }
  return value;
}

bool ValidName(const std::string& flag, const std::string& name, size_t limit) {
  bool ok = !name.empty() && name.size() < limit;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.');
  }
  if (!ok) {
    std::fprintf(stderr,
                 "smbfleet-delay-link: --%s: '%s' must be 1-%zu letters, digits, '-', '_' or "
                 "'.'\n",
                 flag.c_str(), name.c_str(), limit - 1);
  }
  return ok;
}

std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "smbfleet-delay-link: '%s': want --flag=value\n", arg.c_str());
      return std::nullopt;
    }
    std::string flag = arg.substr(2, eq - 2);
    std::string value = arg.substr(eq + 1);
    auto number = [&](double low, double high, double* out) {
      std::optional<double> v = ParseNumber(flag, value, low, high);
      ok = ok && v.has_value();
      if (v) {
        *out = *v;
      }
    };
    double count = 0;
    if (flag == "dev_a") {
      o.dev_a = value;
    } else if (flag == "dev_b") {
      o.dev_b = value;
    } else if (flag == "netns_a") {
      o.netns_a = value;
    } else if (flag == "netns_b") {
      o.netns_b = value;
    } else if (flag == "delay_ms_ab") {
      number(0, 10000, &o.delay_ms_ab);
    } else if (flag == "delay_ms_ba") {
      number(0, 10000, &o.delay_ms_ba);
    } else if (flag == "rate_mbit") {
      number(0, 100000, &o.rate_mbit);
    } else if (flag == "queue_packets") {
      number(1, 1 << 20, &count);
      if (count != std::floor(count)) {
        std::fprintf(stderr, "smbfleet-delay-link: --queue_packets: '%s' is not a whole number\n",
                     value.c_str());
        ok = false;
      }
      o.queue_packets = static_cast<int64_t>(count);
    } else if (flag == "max_seconds") {
      number(0.001, 86400, &o.max_seconds);
    } else if (flag == "stats") {
      o.stats = value;
    } else {
      std::fprintf(stderr, "smbfleet-delay-link: unknown flag --%s\n", flag.c_str());
      return std::nullopt;
    }
  }
  ok = ValidName("dev_a", o.dev_a, IFNAMSIZ) && ok;
  ok = ValidName("dev_b", o.dev_b, IFNAMSIZ) && ok;
  if (!o.netns_a.empty()) {
    ok = ValidName("netns_a", o.netns_a, 256) && ok;
  }
  if (!o.netns_b.empty()) {
    ok = ValidName("netns_b", o.netns_b, 256) && ok;
  }
  if (ok && o.dev_a == o.dev_b && o.netns_a == o.netns_b) {
    std::fprintf(stderr, "smbfleet-delay-link: --dev_a and --dev_b name the same device\n");
    ok = false;
  }
  if (!ok) {
    Usage();
    return std::nullopt;
  }
  return o;
}

// A file descriptor closed on scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  void Reset() {
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  int fd_ = -1;
};

// Opens a TAP device NAME, inside /run/netns/NETNS when NETNS is not empty (the thread enters
// that namespace to create it, then returns to its own). The device lives as long as the fd.
Fd OpenTap(const std::string& name, const std::string& netns) {
  Fd home;
  if (!netns.empty()) {
    home = Fd(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    std::string path = "/run/netns/" + netns;
    Fd target(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!home.valid() || !target.valid()) {
      std::fprintf(stderr, "smbfleet-delay-link: open %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return Fd();
    }
    if (setns(target.get(), CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "smbfleet-delay-link: enter namespace %s: %s\n", netns.c_str(),
                   std::strerror(errno));
      return Fd();
    }
  }
  Fd tap(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  int saved_errno = errno;
  if (tap.valid()) {
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(tap.get(), TUNSETIFF, &ifr) != 0) {
      saved_errno = errno;
      tap = Fd();
    }
  }
  if (home.valid() && setns(home.get(), CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "smbfleet-delay-link: return to own namespace: %s\n",
                 std::strerror(errno));
    return Fd();
  }
  if (!tap.valid()) {
    std::fprintf(stderr, "smbfleet-delay-link: create TAP device %s%s%s: %s\n", name.c_str(),
                 netns.empty() ? "" : " in namespace ", netns.c_str(), std::strerror(saved_errno));
  }
  return tap;
}

struct Frame {
  std::vector<uint8_t> bytes;
  int64_t sent_nanos;  // when its last bit has left the line (arrival without a rate cap)
  int64_t due_nanos;   // when it is handed to the other device
};

// One direction: frames wait behind the line (rate cap), then travel the delay, in FIFO order
// (the delay is constant, so the earliest due frame is always at the front).
class Direction {
 public:
  Direction(const char* name, int in_fd, int out_fd, double delay_ms, double rate_mbit,
            int64_t queue_packets)
      : name_(name),
        in_fd_(in_fd),
        out_fd_(out_fd),
        delay_nanos_(std::llround(delay_ms * 1e6)),
        nanos_per_byte_(rate_mbit > 0 ? 8e3 / rate_mbit : 0),
        queue_packets_(queue_packets) {}

  // Reads up to kReadBurst frames from the input device. Each frame's delay runs from its own
  // read: a frame that arrived while the burst was being read must not take an earlier frame's
  // time, or it would leave early (a slow reader, e.g. a sanitizer build, made round trips
  // shorter than configured).
  void Read() {
    for (int i = 0; i < kReadBurst; ++i) {
      uint8_t buffer[kMaxFrameBytes + 1];
      ssize_t n = read(in_fd_, buffer, sizeof(buffer));
      const int64_t now = NowNanos();
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) {
          ++read_errors_;
        }
        return;
      }
      ++frames_in_;
      if (static_cast<size_t>(n) > kMaxFrameBytes) {
        ++dropped_oversize_;
        continue;
      }
      Accept(buffer, static_cast<size_t>(n), now);
    }
  }

  // Hands every frame that is due to the output device.
  void Deliver(int64_t now) {
    while (!queue_.empty() && queue_.front().due_nanos <= now) {
      const Frame& f = queue_.front();
      if (write(out_fd_, f.bytes.data(), f.bytes.size()) < 0) {
        ++write_errors_;
      } else {
        ++frames_out_;
        bytes_out_ += static_cast<int64_t>(f.bytes.size());
      }
      queue_.pop_front();
      if (sent_ > 0) {
        --sent_;
      }
    }
  }

  // The earliest due frame, or -1 when none waits.
  int64_t NextDue() const { return queue_.empty() ? -1 : queue_.front().due_nanos; }

  std::string StatsJson() const {
    char line[512];
    std::snprintf(line, sizeof(line),
                  "{\"direction\": \"%s\", \"delayMs\": %.6g, \"framesIn\": %lld, "
                  "\"framesOut\": %lld, \"bytesOut\": %lld, \"droppedQueueFull\": %lld, "
                  "\"droppedOversize\": %lld, \"maxQueued\": %lld, \"readErrors\": %lld, "
                  "\"writeErrors\": %lld}",
                  name_, static_cast<double>(delay_nanos_) / 1e6,
                  static_cast<long long>(frames_in_), static_cast<long long>(frames_out_),
                  static_cast<long long>(bytes_out_), static_cast<long long>(dropped_full_),
                  static_cast<long long>(dropped_oversize_), static_cast<long long>(max_queued_),
                  static_cast<long long>(read_errors_), static_cast<long long>(write_errors_));
    return line;
  }

 private:
  void Accept(const uint8_t* data, size_t size, int64_t now) {
    // Frames at the front whose last bit has left the line are only travelling now.
    while (sent_ < static_cast<int64_t>(queue_.size()) &&
           queue_[static_cast<size_t>(sent_)].sent_nanos <= now) {
      ++sent_;
    }
    // With a rate cap, the queue is what waits for the line; without, the delay line itself.
    int64_t queued = nanos_per_byte_ > 0 ? static_cast<int64_t>(queue_.size()) - sent_
                                         : static_cast<int64_t>(queue_.size());
    if (queued >= queue_packets_) {
      ++dropped_full_;
      return;
    }
    int64_t sent = now;
    if (nanos_per_byte_ > 0) {
      int64_t start = line_free_nanos_ > now ? line_free_nanos_ : now;
      sent = start +
             static_cast<int64_t>(nanos_per_byte_ * static_cast<double>(size + kLineOverheadBytes));
      line_free_nanos_ = sent;
    }
    queue_.push_back(Frame{std::vector<uint8_t>(data, data + size), sent, sent + delay_nanos_});
    if (queued + 1 > max_queued_) {
      max_queued_ = queued + 1;
    }
  }

  const char* name_;
  int in_fd_;
  int out_fd_;
  int64_t delay_nanos_;
  double nanos_per_byte_;
  int64_t queue_packets_;
  std::deque<Frame> queue_;
  int64_t sent_ = 0;  // frames at the front of queue_ that have left the line
  int64_t line_free_nanos_ = 0;
  int64_t frames_in_ = 0;
  int64_t frames_out_ = 0;
  int64_t bytes_out_ = 0;
  int64_t dropped_full_ = 0;
  int64_t dropped_oversize_ = 0;
  int64_t max_queued_ = 0;
  int64_t read_errors_ = 0;
  int64_t write_errors_ = 0;
};

bool WriteStats(const Options& o, const Direction& ab, const Direction& ba, double seconds,
                const char* stopped_by) {
  FILE* f = std::fopen(o.stats.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "smbfleet-delay-link: --stats %s: %s\n", o.stats.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(f,
               "{\"devA\": \"%s\", \"devB\": \"%s\", \"rateMbit\": %.6g, \"queuePackets\": %lld, "
               "\"seconds\": %.3f, \"stoppedBy\": \"%s\",\n \"directions\": [%s,\n  %s]}\n",
               o.dev_a.c_str(), o.dev_b.c_str(), o.rate_mbit,
               static_cast<long long>(o.queue_packets), seconds, stopped_by, ab.StatsJson().c_str(),
               ba.StatsJson().c_str());
  return std::fclose(f) == 0;
}

int Run(const Options& o) {
  // Sleeps end when asked, not up to 50 us later (the default timer slack).
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) {
    std::perror("smbfleet-delay-link: sigprocmask");
    return 1;
  }
  Fd signal_fd(signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
  Fd tap_a = OpenTap(o.dev_a, o.netns_a);
  Fd tap_b = OpenTap(o.dev_b, o.netns_b);
  if (!signal_fd.valid() || !tap_a.valid() || !tap_b.valid()) {
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);

  Direction ab("ab", tap_a.get(), tap_b.get(), o.delay_ms_ab, o.rate_mbit, o.queue_packets);
  Direction ba("ba", tap_b.get(), tap_a.get(), o.delay_ms_ba, o.rate_mbit, o.queue_packets);
  const int64_t start = NowNanos();
  const int64_t deadline = start + static_cast<int64_t>(o.max_seconds * 1e9);
  const char* stopped_by = "max_seconds";
  while (true) {
    int64_t now = NowNanos();
    ab.Deliver(now);
    ba.Deliver(now);
    if (now >= deadline) {
      break;
    }
    int64_t wake = deadline;
    for (int64_t due : {ab.NextDue(), ba.NextDue()}) {
      if (due >= 0 && due < wake) {
        wake = due;
      }
    }
    int64_t wait = wake > now ? wake - now : 0;
    timespec timeout{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    pollfd fds[3] = {
        {tap_a.get(), POLLIN, 0}, {tap_b.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
    int ready = ppoll(fds, 3, &timeout, nullptr);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      std::perror("smbfleet-delay-link: ppoll");
      return 1;
    }
    if ((fds[2].revents & POLLIN) != 0) {
      stopped_by = "signal";
      break;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      ab.Read();
    }
    if ((fds[1].revents & POLLIN) != 0) {
      ba.Read();
    }
    if (((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
      std::fprintf(stderr, "smbfleet-delay-link: a TAP device failed\n");
      return 1;
    }
  }
  double seconds = static_cast<double>(NowNanos() - start) / 1e9;
  if (!o.stats.empty() && !WriteStats(o, ab, ba, seconds, stopped_by)) {
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<Options> options = ParseOptions(argc, argv);
  if (!options) {
    return 2;
  }
  return Run(*options);
}
