#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/core/command_runner.h"

extern char** environ;

namespace smbfleet::agent {
namespace {

class PosixCommandRunner : public CommandRunner {
 public:
  absl::StatusOr<CommandResult> Run(const Command& command) override;
};

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::vector<std::string> BuildEnv(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (extra.count(name) == 0) env.push_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(absl::StrCat(k, "=", v));
  return env;
}

// write() to the child's stdin without a SIGPIPE when the child has gone: SIGPIPE is blocked in
// this thread for the call and the one it raised (thread-directed) is taken back. The process's
// disposition is never touched, so runs on other threads and the rest of the agent are unaffected.
ssize_t WriteWithoutSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_only, old_mask, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigemptyset(&pending);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  ::sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ssize_t w = ::write(fd, data, n);
  int err = errno;
  if (w < 0 && err == EPIPE && !was_pending) {
    const timespec zero{};
    while (::sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = err;
  return w;
}

// Waits for the child until the deadline; false when it is still running then.
bool ReapBy(pid_t pid, std::chrono::steady_clock::time_point deadline, int* status) {
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

absl::StatusOr<CommandResult> PosixCommandRunner::Run(const Command& command) {
  if (command.argv.empty()) return absl::InvalidArgumentError("empty command");
  int out_pipe[2], err_pipe[2], in_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<std::string> env_strings = BuildEnv(command.env);
  std::vector<char*> argv, envp;
  for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t ignored = ::write(exec_pipe[1], &err, sizeof(err));
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);

  int exec_errno = 0;
  ssize_t n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  ::close(exec_pipe[0]);
  if (n == sizeof(exec_errno)) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::waitpid(pid, nullptr, 0);
    std::string message =
        absl::StrCat(command.argv[0], ": cannot run: ", std::strerror(exec_errno));
    if (exec_errno == ENOENT) return absl::NotFoundError(message);
    return absl::FailedPreconditionError(message);
  }

  SetNonBlocking(in_pipe[1]);
  SetNonBlocking(out_pipe[0]);
  SetNonBlocking(err_pipe[0]);
  CommandResult result;
  size_t stdin_off = 0;
  int in_fd = in_pipe[1];
  if (command.stdin_data.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  auto deadline = std::chrono::steady_clock::now() + command.timeout;
  absl::Status failure;
  auto timed_out = [&] {
    return absl::DeadlineExceededError(absl::StrCat(DescribeCommand(command), ": timed out after ",
                                                    command.timeout.count(), " ms"));
  };

  while (out_fd >= 0 || err_fd >= 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      failure = timed_out();
      break;
    }
    int wait_ms =
        static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
        1;
    pollfd fds[3];
    int nfds = 0;
    if (out_fd >= 0) fds[nfds++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[nfds++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[nfds++] = {in_fd, POLLOUT, 0};
    int ready = ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    if (ready < 0 && errno != EINTR) {
      failure = absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
      break;
    }
    for (int i = 0; i < nfds; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        ssize_t w = WriteWithoutSigpipe(in_fd, command.stdin_data.data() + stdin_off,
                                        command.stdin_data.size() - stdin_off);
        if (w > 0) stdin_off += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) stdin_off = command.stdin_data.size();
        if (stdin_off >= command.stdin_data.size()) {
          ::close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      std::string* sink = fds[i].fd == out_fd ? &result.stdout_data : &result.stderr_data;
      char buf[65536];
      ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        sink->append(buf, static_cast<size_t>(r));
        if (sink->size() > command.max_output_bytes) {
          failure = absl::ResourceExhaustedError(absl::StrCat(DescribeCommand(command),
                                                              ": output larger than the limit of ",
                                                              command.max_output_bytes, " bytes"));
        }
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        ::close(fds[i].fd);
        if (fds[i].fd == out_fd)
          out_fd = -1;
        else
          err_fd = -1;
      }
    }
    if (!failure.ok()) break;
  }
  if (in_fd >= 0) ::close(in_fd);
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);

  int status = 0;
  // A child that closed its stdout and stderr may still hang: it gets the rest of the timeout.
  if (failure.ok() && !ReapBy(pid, deadline, &status)) failure = timed_out();
  if (!failure.ok()) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return failure;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::unique_ptr<CommandRunner> NewPosixCommandRunner() {
  return std::make_unique<PosixCommandRunner>();
}

}  // namespace smbfleet::agent
