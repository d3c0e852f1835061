#include "agent/core/backoff.h"

#include <algorithm>

namespace smbfleet::agent {

Backoff::Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, uint64_t seed)
    : base_(base),
      cap_(cap),
      rng_(static_cast<std::minstd_rand::result_type>((seed ^ (seed >> 32)) & 0xffffffffu)) {}

std::chrono::milliseconds Backoff::Ceiling() const {
  int64_t ceiling = base_.count();
  for (int i = 0; i < attempt_ && ceiling < cap_.count(); ++i) ceiling *= 2;
  return std::chrono::milliseconds(std::min<int64_t>(ceiling, cap_.count()));
}

std::chrono::milliseconds Backoff::Next() {
  int64_t ceiling = Ceiling().count();
  ++attempt_;
  std::uniform_int_distribution<int64_t> dist(0, ceiling);
  return std::chrono::milliseconds(dist(rng_));
}

std::chrono::milliseconds SplayedInterval(std::chrono::milliseconds interval,
                                          std::chrono::milliseconds splay, std::mt19937_64& rng) {
  if (splay.count() <= 0) return interval;
  std::uniform_int_distribution<int64_t> dist(-splay.count() / 2, splay.count() / 2);
  return interval + std::chrono::milliseconds(dist(rng));
}

}  // namespace smbfleet::agent
