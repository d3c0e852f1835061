#ifndef SMBFLEET_AGENT_CORE_TESTING_FAKE_TCP_STATS_H_
#define SMBFLEET_AGENT_CORE_TESTING_FAKE_TCP_STATS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/tcp_stats.h"

namespace smbfleet::agent::testing {

// TcpStats answering every call with one fixed result, and remembering the ports asked for.
class FakeTcpStats : public TcpStats {
 public:
  explicit FakeTcpStats(absl::StatusOr<std::vector<TcpConnection>> result)
      : result_(std::move(result)) {}
  absl::StatusOr<std::vector<TcpConnection>> Connections(
      const std::vector<uint16_t>& local_ports) override {
    ++calls_;
    ports_ = local_ports;
    return result_;
  }
  int calls() const { return calls_; }
  const std::vector<uint16_t>& ports() const { return ports_; }

 private:
  absl::StatusOr<std::vector<TcpConnection>> result_;
  int calls_ = 0;
  std::vector<uint16_t> ports_;
};

}  // namespace smbfleet::agent::testing

#endif  // SMBFLEET_AGENT_CORE_TESTING_FAKE_TCP_STATS_H_
