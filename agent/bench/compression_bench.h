#ifndef SMBFLEET_AGENT_BENCH_COMPRESSION_BENCH_H_
#define SMBFLEET_AGENT_BENCH_COMPRESSION_BENCH_H_

// The on-host compression benchmark: what this CPU compresses and decompresses per second, per
// thread, with the SMB 3.1.1 algorithms a well-kept library implements, and the ratio each
// reaches on typical content. The cost model (policy/cost) turns these rows into predicted
// throughput and CPU with compression on.
//
// Algorithms: XPRESS Huffman (COMPRESSION_LZ77_HUFFMAN, MS-XCA LZ77+Huffman) through wimlib's
// XPRESS compressor at its default level, and LZ4 (COMPRESSION_LZ4) through liblz4 as the fast
// reference. The Windows build takes XPRESS Huffman from the OS's Compression API (cabinet.dll)
// and has no LZ4 (Unimplemented when asked for). Data goes through in chunks of at most 64 KiB
// (wimlib's XPRESS limit, and the size Windows compresses an SMB payload in); a chunk that does not
// get smaller is counted at its own size, as SMB then sends it uncompressed, and its decompression
// is timed as a copy.
//
// Polite like the crypto benchmark (crypto_bench.h): its own thread at the lowest priority,
// a wall-clock budget, rates per second of that thread's CPU time.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

// The largest chunk wimlib's XPRESS takes, and the default.
inline constexpr size_t kMaxCompressionChunkBytes = 64 << 10;
// The largest corpus or input MakeCorpus and MeasureCompression accept.
inline constexpr size_t kMaxCorpusBytes = 256u << 20;

// "text", "vm-disk", "compressed": the corpora MakeCorpus makes and the benchmark runs.
std::vector<std::string> CorpusKinds();

// A deterministic corpus of `bytes` bytes: the same kind, size and seed give the same bytes on
// every host and build (own PRNG, no std:: distributions).
//   text        log lines (timestamps, levels, components, templated messages with ids,
//               addresses and counters): the repetition real logs and text files have.
//   vm-disk     4 KiB blocks in extents of 1 to 16 blocks: 25% zero (free space never
//               written), 10% text (logs, configuration), 30% executable-like (x86-64 code and
//               tables: skewed opcodes, little-endian operands), 35% random (media, archives,
//               compressed system files, encrypted data), exactly at every size. A Windows server
//               guest's disk image as a full backup reads it: roughly a quarter unallocated, a
//               third binaries and page file, a third already compressed, the rest text.
//   compressed  random bytes: already compressed or encrypted data, incompressible.
// InvalidArgument for an unknown kind or bytes outside 1..kMaxCorpusBytes.
absl::StatusOr<std::string> MakeCorpus(absl::string_view kind, size_t bytes, uint64_t seed);

struct CompressionMeasureOptions {
  size_t chunk_bytes = kMaxCompressionChunkBytes;  // 1..kMaxCompressionChunkBytes
  // Wall-clock time to keep compressing, and again decompressing, in whole passes over the
  // input (rates still divide by CPU time); 0 = one pass each. A pass is never cut short.
  std::chrono::milliseconds min_time{0};
  // False: compress only (one pass, ratio only; the rates stay 0), e.g. for share sampling.
  bool decompress = true;
};

struct CompressionResult {
  uint64_t input_bytes = 0;
  // Sum over chunks of min(compressed, chunk): what SMB would send.
  uint64_t compressed_bytes = 0;
  uint64_t chunks = 0;
  uint64_t stored_chunks = 0;  // chunks that did not get smaller
  double ratio = 0;            // input_bytes / compressed_bytes
  // Input bytes per second of the calling thread's CPU time.
  double compress_bytes_per_second = 0;
  double decompress_bytes_per_second = 0;
};

// Compresses `input` chunk by chunk, decompresses every chunk and checks it is the input again.
// InvalidArgument for an algorithm not benchmarked (only LZ77_HUFFMAN and LZ4 are), empty or
// oversized input, or a bad chunk size; Internal when a library fails or the round trip
// differs.
absl::StatusOr<CompressionResult> MeasureCompression(smbfleet::v1::CompressionAlgorithm algorithm,
                                                     absl::string_view input,
                                                     const CompressionMeasureOptions& options = {});

// COMPRESSION_LZ77_HUFFMAN, COMPRESSION_LZ4 (Windows builds: COMPRESSION_LZ77_HUFFMAN only).
std::vector<smbfleet::v1::CompressionAlgorithm> CompressionAlgorithms();

struct CompressionBenchOptions {
  size_t corpus_bytes = 1 << 20;  // per corpus
  size_t chunk_bytes = kMaxCompressionChunkBytes;
  std::chrono::milliseconds budget{500};
  bool lowest_priority = true;
  // The same seed on every host, so that ratios compare across the fleet.
  uint64_t seed = 17;
  std::vector<std::string> corpora;                            // empty = CorpusKinds()
  std::vector<smbfleet::v1::CompressionAlgorithm> algorithms;  // empty = CompressionAlgorithms()
};

// One row per (algorithm, corpus), threads = 1, measured_at the run's end; rates are per
// thread. The corpora are made on the benchmark's thread before the budget starts (a few ms
// each). Each cell gets an equal slice of the budget (half compressing, half decompressing) and
// times at least one pass over its corpus; past twice the budget (a busy host, idle priority)
// the remaining cells are left out, so the call returns within about twice the budget.
// InvalidArgument for bad options; Internal when a library fails; Unavailable when XPRESS
// cannot be loaded; DeadlineExceeded when every cell was left out (host busy).
absl::StatusOr<std::vector<smbfleet::v1::CompressionBenchmark>> RunCompressionBenchmark(
    const CompressionBenchOptions& options);

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_COMPRESSION_BENCH_H_
