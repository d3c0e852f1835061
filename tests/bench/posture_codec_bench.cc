// What a posture stored against its day's base costs (collector/store/postgres/posture_codec.h):
// a day of the loadgen's simulated postures per host (the first is the base, each later one a
// delta against it), encoded by the collector's codec, by the LZ4 form it wrote before, and by
// zstd at other levels. Prints one JSON object: bytes per delta and encode/decode time. A
// figure, not a test; the level the codec uses is chosen from it (docs/scaling.md).
//
//   posture_codec_bench [--hosts=200] [--postures=24] [--session_reports=1] [--settings_every=24]
//
// The collector also stores a posture whole as the next base when the one before it would be a
// base twice as good; this benchmark keeps the first posture of the day as the base throughout,
// as happens when every session is new each time.

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "collector/store/postgres/posture_codec.h"
#include "loadgen/sim_posture.h"
#include "nlohmann/json.hpp"
#include "tests/bench/bench_flags.h"

namespace {

using smbfleet::tests::bench::IntFlag;
using smbfleet::tests::bench::Percentile;
using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

size_t Lz4HcDeltaBytes(const std::string& plain, const std::string& base) {
  LZ4_streamHC_t* stream = LZ4_createStreamHC();
  LZ4_loadDictHC(stream, base.data(), static_cast<int>(base.size()));
  std::string block(static_cast<size_t>(LZ4_compressBound(static_cast<int>(plain.size()))), '\0');
  const int n =
      LZ4_compress_HC_continue(stream, plain.data(), block.data(), static_cast<int>(plain.size()),
                               static_cast<int>(block.size()));
  LZ4_freeStreamHC(stream);
  return n > 0 ? static_cast<size_t>(n) : plain.size();
}

size_t ZstdDeltaBytes(const std::string& plain, const std::string& base, int level) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_refPrefix(c, base.data(), base.size());
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), plain.data(), plain.size());
  ZSTD_freeCCtx(c);
  return ZSTD_isError(n) ? plain.size() : n;
}

struct Day {
  std::string base;
  std::vector<std::string> later;
};

}  // namespace

int main(int argc, char** argv) {
  const int hosts = IntFlag(argc, argv, "hosts", 200);
  const int postures = IntFlag(argc, argv, "postures", 24);
  const int session_reports = IntFlag(argc, argv, "session_reports", 1);
  const int settings_every = IntFlag(argc, argv, "settings_every", 24);
  if (hosts < 1 || postures < 2 || session_reports < 1 || settings_every < 1) {
    std::fprintf(stderr, "posture_codec_bench: --hosts >= 1, --postures >= 2, the others >= 1\n");
    return 2;
  }

  std::mt19937_64 rng(1);
  std::vector<Day> days;
  double plain_bytes = 0;
  for (int h = 0; h < hosts; ++h) {
    const std::string name = absl::StrFormat("sim-%05d", h);
    const smbfleet::loadgen::HostShape shape = smbfleet::loadgen::DrawShape(rng);
    Day day;
    for (int i = 0; i < postures; ++i) {
      std::string bytes;
      smbfleet::loadgen::SimulatedPosture(name, shape, static_cast<uint64_t>(i), rng,
                                          static_cast<uint64_t>(settings_every),
                                          static_cast<uint64_t>(session_reports))
          .SerializeToString(&bytes);
      if (i == 0) {
        day.base = std::move(bytes);
      } else {
        plain_bytes += static_cast<double>(bytes.size());
        day.later.push_back(std::move(bytes));
      }
    }
    days.push_back(std::move(day));
  }
  const double deltas = static_cast<double>(hosts) * (postures - 1);

  // The collector's codec: bytes, encode and decode time per delta.
  double codec_bytes = 0;
  std::vector<double> encode_us;
  std::vector<double> decode_us;
  size_t failures = 0;
  for (const Day& day : days) {
    for (const std::string& plain : day.later) {
      Clock::time_point t0 = Clock::now();
      std::optional<std::string> delta =
          smbfleet::collector::pg::EncodePostureDelta(plain, day.base);
      encode_us.push_back(MicrosSince(t0));
      const std::string& stored = delta.has_value() ? *delta : plain;
      codec_bytes += static_cast<double>(stored.size());
      t0 = Clock::now();
      absl::StatusOr<std::string> back =
          smbfleet::collector::pg::DecodeStoredPosture(stored, day.base, "bench");
      decode_us.push_back(MicrosSince(t0));
      if (!back.ok() || *back != plain) ++failures;
    }
  }

  double lz4_bytes = 0;
  std::vector<double> lz4_us;
  for (const Day& day : days) {
    for (const std::string& plain : day.later) {
      const Clock::time_point t0 = Clock::now();
      lz4_bytes += static_cast<double>(Lz4HcDeltaBytes(plain, day.base));
      lz4_us.push_back(MicrosSince(t0));
    }
  }
  nlohmann::json levels = nlohmann::json::array();
  for (int level : {1, 3, 6, 9, 12, 15, 19}) {
    double bytes = 0;
    std::vector<double> us;
    for (const Day& day : days) {
      for (const std::string& plain : day.later) {
        const Clock::time_point t0 = Clock::now();
        bytes += static_cast<double>(ZstdDeltaBytes(plain, day.base, level));
        us.push_back(MicrosSince(t0));
      }
    }
    levels.push_back({{"level", level},
                      {"bytes_per_delta", bytes / deltas},
                      {"encode_us_p50", Percentile(us, 0.5)},
                      {"encode_us_p99", Percentile(us, 0.99)}});
  }

  const nlohmann::json out = {{"hosts", hosts},
                              {"postures_per_host", postures},
                              {"session_reports", session_reports},
                              {"settings_every", settings_every},
                              {"plain_bytes_per_posture", plain_bytes / deltas},
                              {"codec",
                               {{"bytes_per_delta", codec_bytes / deltas},
                                {"encode_us_p50", Percentile(encode_us, 0.5)},
                                {"encode_us_p99", Percentile(encode_us, 0.99)},
                                {"decode_us_p50", Percentile(decode_us, 0.5)},
                                {"round_trip_failures", failures}}},
                              {"lz4_hc",
                               {{"bytes_per_delta", lz4_bytes / deltas},
                                {"encode_us_p50", Percentile(lz4_us, 0.5)},
                                {"encode_us_p99", Percentile(lz4_us, 0.99)}}},
                              {"zstd_levels", levels}};
  std::printf("%s\n", out.dump().c_str());
  return failures == 0 ? 0 : 1;
}
