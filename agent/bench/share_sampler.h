#ifndef SMBFLEET_AGENT_BENCH_SHARE_SAMPLER_H_
#define SMBFLEET_AGENT_BENCH_SHARE_SAMPLER_H_

// Optional share sampling: how well a share's data compresses, estimated by compressing the
// first bytes of a bounded number of its files. The report gets only the ratio and how much was
// sampled (Share.compressibility), never a file name or a byte of content.
//
// Read-only and polite: a thread of its own at idle CPU and I/O priority; the walk stays inside
// the share (symbolic links and junctions are neither followed nor read) and looks at a bounded
// number of directory entries; files are opened without following a link, without waiting on
// FIFOs and without moving their access time.

#include <cstdint>
#include <string>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

struct SamplingLimits {
  uint32_t max_files = 16;
  uint64_t max_bytes_per_file = 1 << 20;
  uint64_t max_bytes = 16 << 20;
  uint32_t max_entries = 10'000;  // directory entries the walk looks at, at most
  smbfleet::v1::CompressionAlgorithm algorithm = smbfleet::v1::COMPRESSION_LZ77_HUFFMAN;
  uint64_t seed = 17;  // which files are picked: the same on every run of an unchanged share
};

// Samples the directory tree at `root` (the share's path on this host). Files are picked
// uniformly among the non-empty regular files the walk sees (reservoir sampling); each gives up
// to max_bytes_per_file from its start, all together up to max_bytes. Without a ratio,
// not_sampled_reason says why: "sampling budget is 0", "path not found", "not a directory",
// "permission denied" (the root, or every picked file), "no regular files", or a compressor
// error. measured_at is set either way.
smbfleet::v1::CompressibilitySample SampleCompressibility(const std::string& root,
                                                          const SamplingLimits& limits);

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_SHARE_SAMPLER_H_
