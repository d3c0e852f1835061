#ifndef SMBFLEET_AGENT_BENCH_CRYPTO_BENCH_H_
#define SMBFLEET_AGENT_BENCH_CRYPTO_BENCH_H_

// The on-host crypto benchmark: what this CPU does per second for each SMB signing algorithm
// and cipher, at SMB-sized messages, on one thread and on all cores. The cost model
// (policy/cost) turns these rows into predicted throughput and CPU.
//
// Polite by construction: the work runs on threads of its own, at the lowest scheduling
// priority (the caller's threads are untouched), inside a wall-clock budget. Rates are payload
// bytes per second of the benchmark thread's CPU time (as `openssl speed` divides by user CPU
// time), so a thread that waits behind other work does not report a slower CPU.

#include <chrono>
#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/bench/cpu_features.h"
#include "agent/bench/crypto_op.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

struct BenchOptions {
  std::vector<size_t> buffer_sizes = {4096, 65536, 1 << 20};
  unsigned threads = 0;  // 0 = all cores (std::thread::hardware_concurrency)
  std::chrono::milliseconds budget{1500};
  bool lowest_priority = true;
  // Empty = every algorithm of BenchmarkedAlgorithms().
  std::vector<smbfleet::v1::CryptoAlgorithm> algorithms;
  // kPerMessage only to compare with `openssl speed` (see CryptoOp::KeyUse); agents keep the
  // default, the SMB way.
  CryptoOp::KeyUse key_use = CryptoOp::KeyUse::kPerSession;
};

// AES-128-GCM, AES-256-GCM, AES-128-CCM, AES-256-CCM, AES-128-CMAC, AES-128-GMAC, HMAC-SHA256.
std::vector<smbfleet::v1::CryptoAlgorithm> BenchmarkedAlgorithms();

// One row per (algorithm, buffer size) with threads = 1, and, when more than one thread is
// used, another with threads = N (the sum of the N threads' rates). measured_at is the run's
// end. Every cell times at least one message: a thread that was held back past its slice still
// measures (CPU time is the divisor), so the run may overrun the budget by one message per
// cell (at most 1 MiB of crypto each). Past twice the budget (a saturated host, idle
// priority), the remaining cells are skipped and their rows left out, so the call returns
// within about twice the budget.
// InvalidArgument for bad options (no sizes, a size of 0 or over 16 MiB, budget under 10 ms,
// an algorithm not benchmarked); Internal when OpenSSL fails; DeadlineExceeded when every cell
// was skipped (host busy).
absl::StatusOr<std::vector<smbfleet::v1::Benchmark>> RunCryptoBenchmark(
    const BenchOptions& options);

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_CRYPTO_BENCH_H_
