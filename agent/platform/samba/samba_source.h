#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_SOURCE_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_SOURCE_H_

// Posture of a Samba server: effective configuration from `testparm -s -v SMB_CONF`, live
// sessions, tree connects and open files from `smbstatus -s SMB_CONF --json`. Both need root.

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/source.h"
#include "agent/core/tcp_stats.h"
#include "agent/platform/samba/samba_logs.h"

namespace smbfleet::agent::samba {

struct SambaOptions {
  std::string smb_conf = "/etc/samba/smb.conf";
  std::string smbstatus = "smbstatus", testparm = "testparm", smbcontrol = "smbcontrol";
  // Added to the tools' environment, e.g. nss_wrapper's LD_PRELOAD for a lab server.
  std::map<std::string, std::string> env;
  std::chrono::milliseconds timeout{30000};
  // Refused sessions from smbd's log files (`log file` in smb.conf) as events, newest first up
  // to max_log_events; older ones are counted in events_dropped.
  bool read_logs = true;
  size_t max_log_events = 200;
  // posture.nics[] from ROOT/class/net (sysfs_nics.h); empty: not read.
  std::string sysfs_root = "/sys";
};

// The commands the source and the applier run, built in one place (argv only).
Command TestparmDumpCommand(const SambaOptions& options);   // testparm -s -v SMB_CONF
Command TestparmCheckCommand(const SambaOptions& options);  // testparm -s SMB_CONF
Command SmbStatusCommand(const SambaOptions& options);      // smbstatus -s SMB_CONF --json

}  // namespace smbfleet::agent::samba

namespace smbfleet::agent {

using SambaOptions = samba::SambaOptions;

// Fills host.platform (PLATFORM_SAMBA), host.samba_version, server, client, shares, sessions
// (with one ShareConnection per tree connect, and the round-trip times of the session's TCP
// connection from sock_diag), open_files, nics and probe_errors. A failed or unparsable command
// is a probe error; Collect() fails only when smb_conf does not exist. `runner` must outlive the
// source.
std::unique_ptr<PostureSource> NewSambaSource(SambaOptions options, CommandRunner* runner);

// As above with the log files behind `log_files` and the TCP statistics behind `tcp_stats`
// (tests; null: sessions get no round-trip times); both must outlive the source.
std::unique_ptr<PostureSource> NewSambaSource(SambaOptions options, CommandRunner* runner,
                                              samba::LogFiles* log_files,
                                              TcpStats* tcp_stats = nullptr);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_SAMBA_SOURCE_H_
