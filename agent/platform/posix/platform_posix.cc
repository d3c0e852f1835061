// POSIX: fork/exec, SIGINT/SIGTERM, no live Windows source.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/platform/platform.h"
#include "agent/platform/posix/proc_counters.h"
#include "agent/platform/posix/sock_diag.h"
#include "agent/platform/windows/shim/system_paths.h"
#include "common/logging.h"

namespace smbfleet::agent::platform {
namespace {

// The signal handler only writes to this pipe (async-signal-safe); a thread reads it and calls
// on_stop, which may take locks and notify condition variables.
int g_stop_pipe[2] = {-1, -1};

void OnStopSignal(int) {
  const char byte = 1;
  int saved = errno;
  (void)!::write(g_stop_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

std::vector<std::string> Arguments(int argc, char** argv) {
  return std::vector<std::string>(argv, argv + argc);
}

void UseBinaryStdout() {}

void LimitHeapArenas() {
#ifdef __GLIBC__
  ::mallopt(M_ARENA_MAX, 1);
#endif
}

void ReleaseFreeHeap() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
}

absl::Status ReleaseProgramPages() {
#ifdef __linux__
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return absl::UnavailableError(absl::StrCat("/proc/self/exe: ", ec.message()));
  std::ifstream maps("/proc/self/maps");
  if (!maps) return absl::UnavailableError("/proc/self/maps: cannot be read");
  // A line: START-END PERMS OFFSET DEV INODE PATH, the path last and possibly with spaces.
  std::string line;
  int released = 0;
  while (std::getline(maps, line)) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %4s %*s %*s %*s %n", &start, &end,
                    perms, &path_at) != 3 ||
        path_at == 0 || line.compare(path_at, std::string::npos, exe.string()) != 0) {
      continue;
    }
    // Read-only mappings only: a writable one holds the program's own data.
    if (perms[1] == 'w') continue;
    // An address the kernel listed, back to a pointer.
    void* mapping = reinterpret_cast<void*>(start);  // NOLINT(performance-no-int-to-ptr)
    if (::madvise(mapping, end - start, MADV_PAGEOUT) != 0) {
      return absl::UnavailableError(
          absl::StrCat("madvise(MADV_PAGEOUT) on ", exe.string(), ": ", std::strerror(errno)));
    }
    ++released;
  }
  if (released == 0) {
    return absl::NotFoundError(absl::StrCat("no mapping of ", exe.string(), " in /proc/self/maps"));
  }
#endif
  return absl::OkStatus();
}

std::unique_ptr<CommandRunner> NewCommandRunner() { return NewPosixCommandRunner(); }

absl::Status InstallStopHandler(std::function<void()> on_stop) {
  if (g_stop_pipe[0] >= 0) return absl::FailedPreconditionError("stop handler installed twice");
  if (::pipe(g_stop_pipe) != 0) {
    return absl::InternalError(absl::StrCat("stop handler: pipe: ", std::strerror(errno)));
  }
  // A full pipe must not block the handler: one pending byte is enough to stop.
  ::fcntl(g_stop_pipe[1], F_SETFL, ::fcntl(g_stop_pipe[1], F_GETFL) | O_NONBLOCK);
  ::fcntl(g_stop_pipe[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(g_stop_pipe[1], F_SETFD, FD_CLOEXEC);
  std::thread([on_stop = std::move(on_stop)] {
    char byte;
    while (true) {
      ssize_t n = ::read(g_stop_pipe[0], &byte, 1);
      if (n == 1) on_stop();
      if (n == 0 || (n < 0 && errno != EINTR)) return;
    }
  }).detach();
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) {
    if (::sigaction(sig, &sa, nullptr) != 0) {
      return absl::InternalError(
          absl::StrCat("stop handler: sigaction(", sig, "): ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

int RunUntilStopped(const std::function<int()>& run, const std::function<void()>& stop) {
  if (absl::Status s = InstallStopHandler(stop); !s.ok()) {
    Logger("agent")->error("{}", LogSafe(s));
    return 1;
  }
  return run();
}

absl::Status ServiceCommand(const std::string& action, const std::string& /*config*/) {
  return absl::FailedPreconditionError(
      absl::StrCat("service ", action,
                   ": service commands are for Windows; here let the system's service manager "
                   "(systemd, for one) run `smbfleet-agent run --config FILE`"));
}

std::string PowerShellPath() { return windows::shim::PowerShellPathIn("C:\\Windows\\System32"); }

absl::StatusOr<std::unique_ptr<PostureSource>> NewLiveWindowsSource(const SourceContext&) {
  return absl::FailedPreconditionError(
      "source windows: live Windows collection needs the Windows build of the agent; on "
      "this machine use windows-capture:DIR with a folder written by "
      "deploy/windows/Capture-SmbPosture.ps1");
}

namespace {

// The /proc source with the sock_diag reader it borrows.
class OwningProcCounterSource : public CounterSource {
 public:
  OwningProcCounterSource()
      : tcp_stats_(posix::NewSockDiagTcpStats()),
        source_(posix::NewProcCounterSource({}, tcp_stats_.get())) {}
  CounterReading Sample() override { return source_->Sample(); }

 private:
  std::unique_ptr<TcpStats> tcp_stats_;
  std::unique_ptr<CounterSource> source_;
};

}  // namespace

std::unique_ptr<CounterSource> NewCounterSource() {
  return std::make_unique<OwningProcCounterSource>();
}

}  // namespace smbfleet::agent::platform
