#ifndef SMBFLEET_AGENT_PLATFORM_POSIX_PROC_COUNTERS_H_
#define SMBFLEET_AGENT_PLATFORM_POSIX_PROC_COUNTERS_H_

// The Linux CounterSource (docs/agent-changes.md "Counters around a change"), one /proc listing
// and one sock_diag dump per sample, no process started:
//   cpu_percent                busy over total jiffies of /proc/stat's "cpu" line since the last
//                              sample (idle and iowait are not busy)
//   smb_cpu_percent            utime + stime of every process whose comm starts with "smbd"
//                              (/proc/<pid>/stat) over the same total jiffies: percent of all
//                              cores. A process gone since the last sample contributes nothing,
//                              a new one its whole time.
//   smb_read/write_bytes_per_second
//                              tcp_info bytes_acked (sent to clients: read) and bytes_received
//                              (write) of the connections on the SMB ports, per connection
//                              (addresses, ports, inode) since the last sample; a closed
//                              connection contributes nothing, a new one its whole count.
//   available_memory_bytes     MemAvailable of /proc/meminfo
// A file that cannot be read or parsed, or a dump that fails (e.g. no permission), leaves its
// counters absent with an error naming it; so does a counter that went backwards.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/core/counter_source.h"
#include "agent/core/tcp_stats.h"

namespace smbfleet::agent::posix {

struct ProcCountersOptions {
  std::string proc_root = "/proc";            // tests point it at a tree they wrote
  std::vector<uint16_t> smb_ports{445, 139};  // the server's local ports
  std::string server_comm_prefix = "smbd";
  // How often every process's stat is read again (a pid reused by the server between two
  // samples, or a process that became the server by a late exec, is found then).
  std::chrono::steady_clock::duration rescan_interval = std::chrono::minutes(5);
  // The time between socket readings (bytes per second) and between whole scans; steady_clock
  // when unset.
  std::function<std::chrono::steady_clock::time_point()> now;
};

// tcp_stats is not owned; null leaves the byte rates absent.
std::unique_ptr<CounterSource> NewProcCounterSource(ProcCountersOptions options,
                                                    TcpStats* tcp_stats);

}  // namespace smbfleet::agent::posix

#endif  // SMBFLEET_AGENT_PLATFORM_POSIX_PROC_COUNTERS_H_
