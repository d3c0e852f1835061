#include "tests/samba/samba_lab.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/files.h"

namespace smbfleet::testing {
namespace {

constexpr char kLabScript[] = SMBFLEET_SOURCE_DIR "/deploy/samba-lab.sh";

// A port the kernel just handed out on 127.0.0.1; free unless someone races us for it.
absl::StatusOr<int> FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", std::strerror(err)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string Describe(const agent::CommandResult& r) {
  return absl::StrCat("exit ", r.exit_code, ": ", r.stdout_data, r.stderr_data);
}

}  // namespace

std::vector<std::string> Smb1ClientOptions() {
  return {"-mNT1", "--option=client min protocol=NT1"};
}

absl::StatusOr<std::unique_ptr<SambaLab>> SambaLab::Start(const Setup& setup) {
  if (::geteuid() != 0) {
    return absl::FailedPreconditionError("the Samba lab needs root (smbd, smbstatus)");
  }
  std::unique_ptr<SambaLab> lab(new SambaLab());
  lab->runner_ = agent::NewPosixCommandRunner();
  const char* tmp = ::getenv("TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                   "/smbfleet-samba-test.XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
  }
  lab->dir_ = templ;
  if (absl::Status s = MakeDirs(lab->managed_dir()); !s.ok()) return s;
  if (absl::Status s = WriteFileAtomic(lab->managed_dir() + "/posture.conf",
                                       absl::StrCat("# test setup\n", setup.global));
      !s.ok()) {
    return s;
  }
  for (const auto& [share, lines] : setup.shares) {
    if (absl::Status s = WriteFileAtomic(
            absl::StrCat(lab->managed_dir(), "/share-", share, ".conf"),
            absl::StrCat("# test setup\n", lines));
        !s.ok()) {
      return s;
    }
  }
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<int> port = FreeLoopbackPort();
    if (!port.ok()) return port.status();
    absl::StatusOr<agent::CommandResult> r =
        lab->Lab({"start", lab->dir_, std::to_string(*port)});
    if (!r.ok()) return r.status();
    if (r->exit_code == 0) {
      lab->port_ = *port;
      break;
    }
    last = absl::UnavailableError(absl::StrCat("samba-lab.sh start: ", Describe(*r)));
  }
  if (lab->port_ == 0) return last;
  absl::StatusOr<agent::CommandResult> env = lab->Lab({"env", lab->dir_});
  if (!env.ok()) return env.status();
  for (absl::string_view line : absl::StrSplit(env->stdout_data, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    lab->env_[kv.first] = kv.second;
  }
  return lab;
}

SambaLab::~SambaLab() {
  if (dir_.empty()) return;
  auto r = Lab({"stop", dir_});
  if (r.ok() && r->exit_code == 0) {
    // Only the directory this lab created, and only once everything in it has stopped.
    agent::Command rm;
    rm.argv = {"rm", "-rf", "--", dir_};
    (void)runner_->Run(rm);
  }
}

absl::StatusOr<agent::CommandResult> SambaLab::Lab(const std::vector<std::string>& args) {
  agent::Command c;
  c.argv = {"bash", kLabScript};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.timeout = std::chrono::seconds(60);
  return runner_->Run(c);
}

agent::SambaOptions SambaLab::Options() const {
  agent::SambaOptions o;
  o.smb_conf = smb_conf();
  o.env = env_;
  o.timeout = std::chrono::seconds(30);
  return o;
}

absl::Status SambaLab::Hold(const std::string& name, const std::string& share,
                            const std::vector<std::string>& smbclient_options) {
  std::vector<std::string> args = {"hold", dir_, name, share};
  args.insert(args.end(), smbclient_options.begin(), smbclient_options.end());
  absl::StatusOr<agent::CommandResult> r = Lab(args);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("hold ", name, " ", share, ": ", Describe(*r)));
  }
  return absl::OkStatus();
}

absl::Status SambaLab::Send(const std::string& name, const std::string& command) {
  absl::StatusOr<agent::CommandResult> r = Lab({"send", dir_, name, command});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::UnavailableError(absl::StrCat("send: ", Describe(*r)));
  return absl::OkStatus();
}

absl::Status SambaLab::Release(const std::string& name) {
  absl::StatusOr<agent::CommandResult> r = Lab({"release", dir_, name});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::UnavailableError(absl::StrCat("release: ", Describe(*r)));
  // A connection child lingers briefly after its client quits.
  ::usleep(400 * 1000);
  return absl::OkStatus();
}

absl::StatusOr<agent::CommandResult> SambaLab::Connect(
    const std::string& share, const std::vector<std::string>& smbclient_options,
    const std::string& command) {
  agent::Command c;
  c.argv = {"smbclient", "-s", dir_ + "/client.conf", "-p", std::to_string(port_),
            "//127.0.0.1/" + share, "-A", dir_ + "/smbfleet.auth"};
  c.argv.insert(c.argv.end(), smbclient_options.begin(), smbclient_options.end());
  c.argv.push_back("-c");
  c.argv.push_back(command);
  c.timeout = std::chrono::seconds(30);
  return runner_->Run(c);
}

absl::Status SambaLab::Configure(const Setup& setup) {
  if (absl::Status s = WriteFileAtomic(managed_dir() + "/posture.conf",
                                       absl::StrCat("# test setup\n", setup.global));
      !s.ok()) {
    return s;
  }
  for (const auto& [share, lines] : setup.shares) {
    if (absl::Status s = WriteFileAtomic(absl::StrCat(managed_dir(), "/share-", share, ".conf"),
                                         absl::StrCat("# test setup\n", lines));
        !s.ok()) {
      return s;
    }
  }
  agent::Command c;
  c.argv = {"smbcontrol", "-s", smb_conf(), "smbd", "reload-config"};
  c.env = env_;
  absl::StatusOr<agent::CommandResult> r = runner_->Run(c);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError(absl::StrCat("reload: ", Describe(*r)));
  return absl::OkStatus();
}

}  // namespace smbfleet::testing
