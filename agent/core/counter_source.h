#ifndef SMBFLEET_AGENT_CORE_COUNTER_SOURCE_H_
#define SMBFLEET_AGENT_CORE_COUNTER_SOURCE_H_

// The host's load as the agent samples it around a change (docs/agent-changes.md "Counters around
// a change"): CPU, the SMB server's CPU and bytes per second, available memory. Each platform
// implements CounterSource (Linux: agent/platform/posix/proc_counters.h; Windows: PDH through the
// shim) and keeps its own previous raw readings to turn cumulative counters into rates.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "smbfleet/v1/change.pb.h"

namespace smbfleet::agent {

// One Sample(): the counters that could be read (absent ones stay unset) and why the others could
// not, one line per problem naming the input, e.g. "/proc/meminfo: no MemAvailable line".
struct CounterReading {
  smbfleet::v1::CounterSample sample;  // `at` is set by the caller (CounterSampler)
  std::vector<std::string> errors;
};

class CounterSource {
 public:
  virtual ~CounterSource() = default;
  // The counters for "now". Rates cover the time since the previous call; the first call has no
  // rates. A counter with no previous reading, or that went backwards or wrapped, is absent.
  virtual CounterReading Sample() = 0;
};

// The growth of a set of cumulative counters, one per key (a process, a socket), between two
// readings: a key seen for the first time contributes its whole value (it started since the
// previous reading), a key that is gone contributes nothing. Absent on the first reading and when
// any key went backwards (a wrapped or reset counter: the growth is unknown, not made up).
class DeltaSum {
 public:
  std::optional<uint64_t> Update(const std::map<std::string, uint64_t>& now);
  // Forgets the previous reading (the next Update() is a first one): when a reading failed.
  void Reset() { previous_.reset(); }

 private:
  std::optional<std::map<std::string, uint64_t>> previous_;
};

// One cumulative counter: the growth since the previous reading. Absent on the first reading and
// when it went backwards.
class Delta {
 public:
  std::optional<uint64_t> Update(uint64_t now);
  void Reset() { previous_.reset(); }

 private:
  std::optional<uint64_t> previous_;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_COUNTER_SOURCE_H_
