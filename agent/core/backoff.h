#ifndef SMBFLEET_AGENT_CORE_BACKOFF_H_
#define SMBFLEET_AGENT_CORE_BACKOFF_H_

#include <chrono>
#include <cstdint>
#include <random>

namespace smbfleet::agent {

// Capped exponential backoff with full jitter: the n-th wait is uniform in
// [0, min(cap, base * 2^n)], so that a fleet that lost its collector does not come back in step.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, uint64_t seed);

  std::chrono::milliseconds Next();
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }
  // The upper bound of the next wait.
  std::chrono::milliseconds Ceiling() const;

 private:
  std::chrono::milliseconds base_, cap_;
  int attempt_ = 0;
  // A small engine (8 bytes where std::mt19937_64 takes 2.5 KB): jitter needs no more, and the
  // loadgen holds two Backoffs per simulated agent (docs/scaling.md).
  std::minstd_rand rng_;
};

// A point in [-splay/2, +splay/2] around the interval, so that hosts started together drift apart.
std::chrono::milliseconds SplayedInterval(std::chrono::milliseconds interval,
                                          std::chrono::milliseconds splay, std::mt19937_64& rng);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_BACKOFF_H_
