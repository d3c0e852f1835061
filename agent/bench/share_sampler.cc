#include "agent/bench/share_sampler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <filesystem>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/bench/compression_bench.h"
#include "agent/bench/file_prefix.h"
#include "agent/bench/thread_priority.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent::bench {
namespace {

namespace fs = std::filesystem;

// The regular files the walk picked, at most limits.max_files.
struct Picked {
  std::vector<fs::path> files;
  bool root_denied = false;
};

using SteadyClock = std::chrono::steady_clock;

Picked PickFiles(const fs::path& root, const SamplingLimits& limits,
                 SteadyClock::time_point deadline) {
  Picked picked;
  std::mt19937_64 rng(limits.seed);  // the engine is specified; only distributions vary
  uint64_t seen = 0;
  uint32_t entries = 0;
  std::deque<fs::path> dirs = {root};
  while (!dirs.empty() && entries < limits.max_entries && SteadyClock::now() < deadline) {
    const fs::path dir = dirs.front();
    dirs.pop_front();
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      if (dir == root && ec == std::errc::permission_denied) picked.root_denied = true;
      continue;  // an unreadable subdirectory is skipped
    }
    // Sorted, so that the same tree gives the same pick whatever order the OS lists it in.
    std::vector<fs::directory_entry> listed;
    for (; it != fs::directory_iterator() && entries < limits.max_entries; it.increment(ec)) {
      listed.push_back(*it);
      ++entries;
    }
    std::sort(listed.begin(), listed.end());
    for (const fs::directory_entry& entry : listed) {
      // symlink_status: a link (or junction) is never followed, to a file or a directory.
      const fs::file_status status = entry.symlink_status(ec);
      if (ec) continue;
      if (fs::is_directory(status)) {
        dirs.push_back(entry.path());
        continue;
      }
      if (!fs::is_regular_file(status) || entry.file_size(ec) == 0 || ec) continue;
      ++seen;
      if (picked.files.size() < limits.max_files) {
        picked.files.push_back(entry.path());
      } else if (uint64_t slot = rng() % seen; slot < limits.max_files) {
        picked.files[slot] = entry.path();
      }
    }
  }
  return picked;
}

smbfleet::v1::CompressibilitySample Sample(const std::string& root, const SamplingLimits& limits) {
  const SteadyClock::time_point deadline = SteadyClock::now() + limits.max_time;
  smbfleet::v1::CompressibilitySample sample;
  sample.set_algorithm(limits.algorithm);
  if (limits.max_files == 0 || limits.max_bytes_per_file == 0 || limits.max_bytes == 0 ||
      limits.max_entries == 0 || limits.max_time.count() <= 0) {
    sample.set_not_sampled_reason("sampling budget is 0");
    return sample;
  }
  std::error_code ec;
  // u8path: the path is UTF-8; a plain std::string would be read in Windows' ANSI code page.
  const fs::path root_path = fs::u8path(root);
  const fs::file_status status = fs::status(root_path, ec);  // the share's path may be a link
  if (ec || !fs::exists(status)) {
    sample.set_not_sampled_reason(ec == std::errc::permission_denied ? "permission denied"
                                                                     : "path not found");
    return sample;
  }
  if (!fs::is_directory(status)) {
    sample.set_not_sampled_reason("not a directory");
    return sample;
  }
  Picked picked = PickFiles(root_path, limits, deadline);
  if (picked.root_denied) {
    sample.set_not_sampled_reason("permission denied");
    return sample;
  }
  if (picked.files.empty()) {
    sample.set_not_sampled_reason("no regular files");
    return sample;
  }
  uint64_t input = 0;
  uint64_t compressed = 0;
  uint32_t files = 0;
  size_t denied = 0;
  CompressionMeasureOptions options;
  options.decompress = false;
  bool out_of_time = false;
  for (const fs::path& file : picked.files) {
    const uint64_t left = limits.max_bytes - input;
    if (left == 0) break;
    if (SteadyClock::now() >= deadline) {
      out_of_time = true;
      break;
    }
    absl::StatusOr<std::string> bytes = ReadRegularFilePrefix(
        file.u8string(), static_cast<size_t>(std::min(left, limits.max_bytes_per_file)));
    if (!bytes.ok()) {
      denied += absl::IsPermissionDenied(bytes.status()) ? 1 : 0;
      continue;  // gone, refused or swapped for a link since the walk: the next file
    }
    if (bytes->empty()) continue;
    absl::StatusOr<CompressionResult> r = MeasureCompression(limits.algorithm, *bytes, options);
    if (!r.ok()) {
      sample.set_not_sampled_reason(std::string(r.status().message()));
      return sample;
    }
    input += r->input_bytes;
    compressed += r->compressed_bytes;
    ++files;
  }
  if (files == 0) {
    sample.set_not_sampled_reason(out_of_time                     ? "out of time"
                                  : denied == picked.files.size() ? "permission denied"
                                                                  : "no regular files");
    return sample;
  }
  sample.set_ratio(static_cast<double>(input) / static_cast<double>(compressed));
  sample.set_bytes_sampled(input);
  sample.set_files_sampled(files);
  return sample;
}

}  // namespace

smbfleet::v1::CompressibilitySample SampleCompressibility(const std::string& root,
                                                          const SamplingLimits& limits) {
  smbfleet::v1::CompressibilitySample sample;
  std::thread worker([&] {
    // Refusals leave the sample correct, only less polite; nothing to report to.
    (void)LowerCurrentThreadPriority();
    (void)LowerCurrentThreadIoPriority();
    try {
      sample = Sample(root, limits);
    } catch (const std::exception&) {
      // std::filesystem's error_code overloads do not throw, but a path that the platform's
      // narrow encoding cannot hold may (Windows); the agent must not end over a share.
      sample = smbfleet::v1::CompressibilitySample();
      sample.set_algorithm(limits.algorithm);
      sample.set_not_sampled_reason("a file name could not be read");
    }
  });
  worker.join();
  *sample.mutable_measured_at() = google::protobuf::util::TimeUtil::GetCurrentTime();
  return sample;
}

}  // namespace smbfleet::agent::bench
