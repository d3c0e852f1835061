#include "agent/core/counter_source.h"

namespace smbfleet::agent {

std::optional<uint64_t> DeltaSum::Update(const std::map<std::string, uint64_t>& now) {
  std::optional<std::map<std::string, uint64_t>> previous = std::move(previous_);
  previous_ = now;
  if (!previous.has_value()) return std::nullopt;
  uint64_t sum = 0;
  for (const auto& [key, value] : now) {
    auto it = previous->find(key);
    if (it == previous->end()) {
      sum += value;
    } else if (value < it->second) {
      return std::nullopt;
    } else {
      sum += value - it->second;
    }
  }
  return sum;
}

std::optional<uint64_t> Delta::Update(uint64_t now) {
  std::optional<uint64_t> previous = previous_;
  previous_ = now;
  if (!previous.has_value() || now < *previous) return std::nullopt;
  return now - *previous;
}

}  // namespace smbfleet::agent
