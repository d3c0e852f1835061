#include "agent/platform/samba/samba_source.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/core/session_rtt.h"
#include "agent/platform/posix/sock_diag.h"
#include "agent/platform/samba/probe_errors.h"
#include "agent/platform/samba/smbstatus_parser.h"
#include "agent/platform/samba/sysfs_nics.h"
#include "agent/platform/samba/testparm_parser.h"
#include "common/files.h"

namespace smbfleet::agent::samba {
namespace {

Command MakeCommand(const SambaOptions& options, std::vector<std::string> argv) {
  Command c;
  c.argv = std::move(argv);
  c.env = options.env;
  c.timeout = options.timeout;
  return c;
}

// The ports smbd listens on: `smb ports` ("445 139" by default; spaces or commas).
std::vector<uint16_t> SmbPorts(const std::optional<TestparmConfig>& config) {
  std::vector<uint16_t> ports;
  if (config.has_value()) {
    std::string text = config->Global("smb ports").value_or("");
    for (absl::string_view word :
         absl::StrSplit(text, absl::ByAnyChar(" ,\t"), absl::SkipEmpty())) {
      uint32_t port = 0;
      if (absl::SimpleAtoi(word, &port) && port > 0 && port <= 65535) {
        ports.push_back(static_cast<uint16_t>(port));
      }
    }
  }
  if (ports.empty()) ports = {445, 139};
  return ports;
}

class SambaSource : public PostureSource {
 public:
  SambaSource(SambaOptions options, CommandRunner* runner, LogFiles* log_files,
              std::unique_ptr<LogFiles> owned_log_files, TcpStats* tcp_stats,
              std::unique_ptr<TcpStats> owned_tcp_stats)
      : options_(std::move(options)),
        runner_(runner),
        log_files_(log_files),
        owned_log_files_(std::move(owned_log_files)),
        tcp_stats_(tcp_stats),
        owned_tcp_stats_(std::move(owned_tcp_stats)) {}

  absl::StatusOr<v1::Posture> Collect() override;
  std::string Describe() const override { return absl::StrCat("samba:", options_.smb_conf); }

 private:
  SambaOptions options_;
  CommandRunner* runner_;
  LogFiles* log_files_;
  std::unique_ptr<LogFiles> owned_log_files_;
  TcpStats* tcp_stats_;
  std::unique_ptr<TcpStats> owned_tcp_stats_;
};

absl::StatusOr<v1::Posture> SambaSource::Collect() {
  if (!FileExists(options_.smb_conf)) {
    return absl::NotFoundError(absl::StrCat("samba: ", options_.smb_conf, " does not exist"));
  }
  v1::Posture posture;
  posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);

  std::map<std::string, std::string> share_paths;
  auto config = RunAndParse<TestparmConfig>(
      runner_, TestparmDumpCommand(options_), kTestparmProbe, &posture,
      [](const CommandResult& r) { return TestparmConfig::Parse(r.stdout_data); });
  if (config.has_value()) {
    FillConfig(*config, &posture);
    for (const auto& s : posture.shares()) share_paths[s.name()] = s.path();
  }

  auto status = RunAndParse<SmbStatus>(
      runner_, SmbStatusCommand(options_), kSmbstatusProbe, &posture,
      [&](const CommandResult& r) { return ParseSmbStatusJson(r.stdout_data, share_paths); });
  if (status.has_value()) {
    posture.mutable_host()->set_samba_version(status->version);
    std::string guest_account =
        config.has_value() ? config->Global("guest account").value_or("") : "";
    for (auto& session : status->sessions) {
      if (!guest_account.empty() && session.user() == guest_account) session.set_guest(true);
      if (session.user().empty()) session.set_anonymous(true);
      *posture.add_sessions() = std::move(session);
    }
    // smbstatus prints each session's client port: match by address and port.
    FillSessionRoundTrips(tcp_stats_, SmbPorts(config), PeerMatch::kAddressAndPort, kSockDiagProbe,
                          &posture);
    for (auto& file : status->open_files) *posture.add_open_files() = std::move(file);
    std::map<std::string, uint32_t> users;
    for (const auto& session : posture.sessions()) {
      for (const auto& sc : session.shares()) ++users[absl::AsciiStrToLower(sc.name())];
    }
    for (auto& share : *posture.mutable_shares()) {
      share.set_current_users(users[absl::AsciiStrToLower(share.name())]);
    }
  }

  if (options_.read_logs && config.has_value()) {
    LogLimits limits;
    limits.max_events = options_.max_log_events;
    CollectLogEvents(config->Global("log file").value_or(""), log_files_, limits, &posture);
  }

  if (!options_.sysfs_root.empty()) {
    SysfsNics nics = ReadSysfsNics(options_.sysfs_root);
    for (auto& nic : nics.nics) *posture.add_nics() = std::move(nic);
    for (const auto& problem : nics.problems) {
      AddProbeError(&posture, kNicsProbe, "READ", problem);
    }
  }

  if (posture.host().samba_version().empty()) {
    // smbstatus failed; testparm knows the version too ("Version 4.17.12-Debian").
    Command version = MakeCommand(options_, {options_.testparm, "--version"});
    auto r = runner_->Run(version);
    if (r.ok() && r->exit_code == 0) {
      absl::string_view v = absl::StripAsciiWhitespace(r->stdout_data);
      absl::ConsumePrefix(&v, "Version ");
      posture.mutable_host()->set_samba_version(std::string(v));
    }
  }
  return posture;
}

}  // namespace

Command TestparmDumpCommand(const SambaOptions& options) {
  return MakeCommand(options, {options.testparm, "-s", "-v", options.smb_conf});
}

Command TestparmCheckCommand(const SambaOptions& options) {
  return MakeCommand(options, {options.testparm, "-s", options.smb_conf});
}

Command SmbStatusCommand(const SambaOptions& options) {
  return MakeCommand(options, {options.smbstatus, "-s", options.smb_conf, "--json"});
}

}  // namespace smbfleet::agent::samba

namespace smbfleet::agent {

std::unique_ptr<PostureSource> NewSambaSource(SambaOptions options, CommandRunner* runner) {
  std::unique_ptr<samba::LogFiles> files = samba::NewPosixLogFiles();
  samba::LogFiles* raw = files.get();
  std::unique_ptr<TcpStats> tcp = posix::NewSockDiagTcpStats();
  TcpStats* raw_tcp = tcp.get();
  return std::make_unique<samba::SambaSource>(std::move(options), runner, raw, std::move(files),
                                              raw_tcp, std::move(tcp));
}

std::unique_ptr<PostureSource> NewSambaSource(SambaOptions options, CommandRunner* runner,
                                              samba::LogFiles* log_files, TcpStats* tcp_stats) {
  return std::make_unique<samba::SambaSource>(std::move(options), runner, log_files, nullptr,
                                              tcp_stats, nullptr);
}

}  // namespace smbfleet::agent
