#include "collector/store/postgres/posture_codec.h"

#include <lz4.h>
#include <zstd.h>

#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"

namespace smbfleet::collector::pg {
namespace {

constexpr char kDeltaMark = '\x00';
constexpr char kLz4WithBase = '\x01';  // the first form: no longer written, still read
constexpr char kZstdWithBase = '\x02';
// zstd's level for a delta. tests/bench/posture_codec_bench (a day of the loadgen's postures):
// LZ4 HC 1,780 bytes a delta in 42 us; zstd 3 1,588 in 26 us, 9 1,443 in 190 us, 19 1,355 in
// 578 us. A new posture is encoded twice (against its base and against the posture before it),
// so 9 costs a changed report about 0.3 ms of the collector's CPU more than LZ4 did.
constexpr int kZstdLevel = 9;
// The largest plain posture a delta may claim: a report is far smaller (the collector's
// message limit), so a larger size is a damaged row, not an allocation to make.
constexpr uint64_t kMaxPlainBytes = uint64_t{1} << 28;

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint at *pos; false when it runs past the end or over 64 bits.
bool GetVarint(std::string_view in, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < in.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in[(*pos)++]);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// The plain bytes of an LZ4 block made with `base` as its dictionary (rows of the first form).
bool DecodeLz4(std::string_view block, std::string_view base, std::string* plain) {
  const int n = LZ4_decompress_safe_usingDict(
      block.data(), plain->data(), static_cast<int>(block.size()), static_cast<int>(plain->size()),
      base.data(), static_cast<int>(base.size()));
  return n >= 0 && static_cast<size_t>(n) == plain->size();
}

// The plain bytes of a zstd frame made with `base` as its prefix (raw content, never read as
// a trained dictionary).
bool DecodeZstd(std::string_view frame, std::string_view base, std::string* plain) {
  std::unique_ptr<ZSTD_DCtx, DCtxFree> d(ZSTD_createDCtx());
  if (d == nullptr || ZSTD_isError(ZSTD_DCtx_refPrefix(d.get(), base.data(), base.size()))) {
    return false;
  }
  const size_t n =
      ZSTD_decompressDCtx(d.get(), plain->data(), plain->size(), frame.data(), frame.size());
  return !ZSTD_isError(n) && n == plain->size();
}

}  // namespace

bool IsPlainPosture(std::string_view stored) { return stored.empty() || stored[0] != kDeltaMark; }

std::optional<std::string> EncodePostureDelta(std::string_view plain, std::string_view base) {
  if (plain.empty() || base.empty() || !IsPlainPosture(base) || plain.size() > kMaxPlainBytes ||
      base.size() > kMaxPlainBytes) {
    return std::nullopt;
  }
  std::unique_ptr<ZSTD_CCtx, CCtxFree> c(ZSTD_createCCtx());
  if (c == nullptr ||
      ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, kZstdLevel)) ||
      // 4 bytes a posture: a damaged row, or one read with another base, is an error, not a
      // wrong posture.
      ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1)) ||
      ZSTD_isError(ZSTD_CCtx_refPrefix(c.get(), base.data(), base.size()))) {
    return std::nullopt;
  }
  std::string out;
  out.push_back(kDeltaMark);
  out.push_back(kZstdWithBase);
  PutVarint(plain.size(), &out);
  const size_t header = out.size();
  const size_t bound = ZSTD_compressBound(plain.size());
  out.resize(header + bound);
  const size_t n = ZSTD_compress2(c.get(), out.data() + header, bound, plain.data(), plain.size());
  if (ZSTD_isError(n)) return std::nullopt;
  out.resize(header + n);
  if (out.size() >= plain.size()) return std::nullopt;
  return out;
}

absl::StatusOr<std::string> DecodeStoredPosture(std::string_view stored, std::string_view base,
                                                const std::string& what) {
  if (IsPlainPosture(stored)) return std::string(stored);
  if (stored.size() < 2 || (stored[1] != kLz4WithBase && stored[1] != kZstdWithBase)) {
    return absl::DataLossError(
        absl::StrCat("stored posture of ", what, " is in a form this collector does not know"));
  }
  size_t pos = 2;
  uint64_t size = 0;
  if (!GetVarint(stored, &pos, &size) || size == 0 || size > kMaxPlainBytes) {
    return absl::DataLossError(absl::StrCat("stored posture of ", what, " has no valid size"));
  }
  if (base.empty() || !IsPlainPosture(base) || base.size() > kMaxPlainBytes) {
    return absl::DataLossError(
        absl::StrCat("stored posture of ", what, " is missing its base posture of the same day"));
  }
  std::string plain(size, '\0');
  const std::string_view body = stored.substr(pos);
  const bool ok =
      stored[1] == kLz4WithBase ? DecodeLz4(body, base, &plain) : DecodeZstd(body, base, &plain);
  if (!ok) {
    return absl::DataLossError(absl::StrCat("stored posture of ", what, " cannot be decompressed"));
  }
  return plain;
}

}  // namespace smbfleet::collector::pg
