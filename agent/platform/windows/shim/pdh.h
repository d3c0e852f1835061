#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PDH_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PDH_H_

// Windows-only: the host's load from Performance Data Helper counters, by their English names
// (the same on every display language):
//   \Processor(_Total)\% Processor Time
//   \SMB Server Shares(_Total)\Read Bytes/sec, \SMB Server Shares(_Total)\Write Bytes/sec
//   \Memory\Available Bytes
// PDH turns the cumulative counters into rates between two collections, so a rate is absent on
// the first Collect(). A counter PDH cannot add or read is absent with an error naming it.
// Plain structs only (builds with mingw-w64).

#include <optional>
#include <string>
#include <vector>

namespace smbfleet::agent::windows::shim {

struct PdhReading {
  std::optional<double> cpu_percent;
  std::optional<double> smb_read_bytes_per_second;
  std::optional<double> smb_write_bytes_per_second;
  std::optional<double> available_bytes;
  std::vector<std::string> errors;
};

class PdhCounters {
 public:
  PdhCounters();
  ~PdhCounters();
  PdhCounters(const PdhCounters&) = delete;
  PdhCounters& operator=(const PdhCounters&) = delete;

  PdhReading Collect();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_PDH_H_
