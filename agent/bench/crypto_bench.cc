#include "agent/bench/crypto_bench.h"

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/bench/crypto_op.h"
#include "agent/bench/thread_priority.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent::bench {
namespace {

using ::smbfleet::v1::CryptoAlgorithm;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxBufferBytes = 16u << 20;

struct Cell {
  CryptoAlgorithm algorithm;
  size_t buffer_bytes;
  unsigned threads;
  SteadyClock::time_point deadline;
  // Past this, a thread that was held back skips the cell instead of timing one message:
  // an idle-priority thread on a saturated host must not keep the caller waiting for long.
  SteadyClock::time_point give_up;
};

struct CellResult {
  uint64_t bytes = 0;
  double cpu_seconds = 0;
};

// Runs every cell whose `threads` is at least `rank + 1`, in order, each until its deadline.
// Results go to results[cell][rank].
absl::Status RunWorker(unsigned rank, bool lower_priority, CryptoOp::KeyUse key_use,
                       const std::vector<Cell>& cells,
                       std::vector<std::vector<CellResult>>& results) {
  if (lower_priority) {
    // A refusal still leaves the benchmark correct, only less polite; nothing to report to.
    (void)LowerCurrentThreadPriority();
  }
  size_t max_bytes = 0;
  for (const Cell& cell : cells) {
    max_bytes = std::max(max_bytes, cell.buffer_bytes);
  }
  std::vector<uint8_t> buffer(max_bytes);
  uint8_t key[32];
  uint8_t aad[kAadBytes];
  if (RAND_bytes(buffer.data(), static_cast<int>(buffer.size())) != 1 ||
      RAND_bytes(key, sizeof(key)) != 1 || RAND_bytes(aad, sizeof(aad)) != 1) {
    return absl::InternalError("RAND_bytes failed");
  }
  uint8_t nonce[16] = {0};
  uint8_t tag[kTagBytes];
  for (size_t c = 0; c < cells.size(); ++c) {
    const Cell& cell = cells[c];
    if (rank >= cell.threads) {
      std::this_thread::sleep_until(cell.deadline);
      continue;
    }
    if (SteadyClock::now() >= cell.give_up) {
      continue;  // left out of the results
    }
    ASSIGN_OR_RETURN(
        std::unique_ptr<CryptoOp> op,
        CryptoOp::Create(cell.algorithm,
                         absl::MakeConstSpan(key, CryptoOp::KeyBytes(cell.algorithm)), key_use));
    absl::Span<const uint8_t> nonce_span(nonce, CryptoOp::NonceBytes(cell.algorithm));
    absl::Span<uint8_t> message(buffer.data(), cell.buffer_bytes);
    // One uncounted message: first-touch page faults and lazy OpenSSL setup.
    RETURN_IF_ERROR(op->Protect(nonce_span, aad, message, tag));
    uint64_t counter = 0;
    double cpu_start = ThreadCpuSeconds();
    // At least one timed message, even when this thread got no CPU until after the deadline
    // (idle priority on a busy host): a late cell costs one message, not a missing row.
    do {
      ++counter;
      std::memcpy(nonce, &counter, sizeof(counter));  // a fresh nonce per message, as SMB does
      RETURN_IF_ERROR(op->Protect(nonce_span, aad, message, tag));
    } while (SteadyClock::now() < cell.deadline);
    results[c][rank].bytes = counter * cell.buffer_bytes;
    results[c][rank].cpu_seconds = ThreadCpuSeconds() - cpu_start;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<CryptoAlgorithm> BenchmarkedAlgorithms() {
  return {smbfleet::v1::AES_128_GCM, smbfleet::v1::AES_256_GCM,  smbfleet::v1::AES_128_CCM,
          smbfleet::v1::AES_256_CCM, smbfleet::v1::AES_128_CMAC, smbfleet::v1::AES_128_GMAC,
          smbfleet::v1::HMAC_SHA256};
}

absl::StatusOr<std::vector<smbfleet::v1::Benchmark>> RunCryptoBenchmark(
    const BenchOptions& options) {
  if (options.buffer_sizes.empty()) {
    return absl::InvalidArgumentError("bench buffer_sizes: empty");
  }
  for (size_t size : options.buffer_sizes) {
    if (size == 0 || size > kMaxBufferBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("bench buffer_sizes: ", size, " bytes, want 1..", kMaxBufferBytes));
    }
  }
  if (options.budget < std::chrono::milliseconds(10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bench budget: ", options.budget.count(), " ms, want at least 10 ms"));
  }
  std::vector<CryptoAlgorithm> algorithms =
      options.algorithms.empty() ? BenchmarkedAlgorithms() : options.algorithms;
  for (CryptoAlgorithm algorithm : algorithms) {
    if (CryptoOp::KeyBytes(algorithm) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bench algorithms: ", smbfleet::v1::CryptoAlgorithm_Name(algorithm),
                       " is not benchmarked"));
    }
  }
  unsigned threads = options.threads;
  if (threads == 0) {
    threads = std::max(1u, std::thread::hardware_concurrency());
  }
  threads = std::min(threads, 256u);

  // Single-thread cells first, then all-thread cells; each gets an equal slice of the budget.
  std::vector<Cell> cells;
  for (unsigned t : threads > 1 ? std::vector<unsigned>{1, threads} : std::vector<unsigned>{1}) {
    for (CryptoAlgorithm algorithm : algorithms) {
      for (size_t size : options.buffer_sizes) {
        cells.push_back(Cell{algorithm, size, t, {}, {}});
      }
    }
  }
  const auto slice = std::chrono::duration_cast<SteadyClock::duration>(options.budget) /
                     static_cast<int64_t>(cells.size());
  const SteadyClock::time_point start = SteadyClock::now();
  const SteadyClock::time_point give_up =
      start + 2 * std::chrono::duration_cast<SteadyClock::duration>(options.budget);
  for (size_t c = 0; c < cells.size(); ++c) {
    cells[c].deadline = start + slice * static_cast<int64_t>(c + 1);
    cells[c].give_up = give_up;
  }

  std::vector<std::vector<CellResult>> results(cells.size(), std::vector<CellResult>(threads));
  std::vector<absl::Status> statuses(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned rank = 0; rank < threads; ++rank) {
    workers.emplace_back([&, rank] {
      statuses[rank] = RunWorker(rank, options.lowest_priority, options.key_use, cells, results);
    });
  }
  for (std::thread& worker : workers) {
    worker.join();
  }
  for (const absl::Status& status : statuses) {
    RETURN_IF_ERROR(status);
  }

  google::protobuf::Timestamp now = google::protobuf::util::TimeUtil::GetCurrentTime();
  std::vector<smbfleet::v1::Benchmark> rows;
  for (size_t c = 0; c < cells.size(); ++c) {
    double rate = 0;
    unsigned contributing = 0;
    for (unsigned rank = 0; rank < cells[c].threads; ++rank) {
      const CellResult& r = results[c][rank];
      if (r.bytes > 0 && r.cpu_seconds > 0) {
        rate += static_cast<double>(r.bytes) / r.cpu_seconds;
        ++contributing;
      }
    }
    if (contributing < cells[c].threads) {
      continue;  // a thread gave up on this cell; a partial all-core row would read low
    }
    smbfleet::v1::Benchmark& row = rows.emplace_back();
    row.set_algorithm(cells[c].algorithm);
    row.set_buffer_bytes(cells[c].buffer_bytes);
    row.set_bytes_per_second(rate);
    row.set_threads(cells[c].threads);
    *row.mutable_measured_at() = now;
  }
  if (rows.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("crypto benchmark: no cell got CPU time within twice the ",
                     options.budget.count(), " ms budget (host busy)"));
  }
  return rows;
}

}  // namespace smbfleet::agent::bench
