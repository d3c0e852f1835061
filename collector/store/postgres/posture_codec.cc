#include "collector/store/postgres/posture_codec.h"

#include <lz4.h>
#include <lz4hc.h>

#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"

namespace smbfleet::collector::pg {
namespace {

constexpr char kDeltaMark = '\x00';
constexpr char kLz4WithBase = '\x01';
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

struct StreamHcFree {
  void operator()(LZ4_streamHC_t* s) const { LZ4_freeStreamHC(s); }
};

}  // namespace

bool IsPlainPosture(std::string_view stored) { return stored.empty() || stored[0] != kDeltaMark; }

std::optional<std::string> EncodePostureDelta(std::string_view plain, std::string_view base) {
  if (plain.empty() || base.empty() || !IsPlainPosture(base) || plain.size() > kMaxPlainBytes ||
      base.size() > kMaxPlainBytes) {
    return std::nullopt;
  }
  std::unique_ptr<LZ4_streamHC_t, StreamHcFree> stream(LZ4_createStreamHC());
  if (stream == nullptr) return std::nullopt;
  LZ4_resetStreamHC_fast(stream.get(), LZ4HC_CLEVEL_DEFAULT);
  // The dictionary is the base's last 64 KB (LZ4's window); the decoder is given all of it.
  LZ4_loadDictHC(stream.get(), base.data(), static_cast<int>(base.size()));
  std::string out;
  out.push_back(kDeltaMark);
  out.push_back(kLz4WithBase);
  PutVarint(plain.size(), &out);
  const size_t header = out.size();
  const int bound = LZ4_compressBound(static_cast<int>(plain.size()));
  out.resize(header + static_cast<size_t>(bound));
  const int n = LZ4_compress_HC_continue(stream.get(), plain.data(), out.data() + header,
                                         static_cast<int>(plain.size()), bound);
  if (n <= 0) return std::nullopt;
  out.resize(header + static_cast<size_t>(n));
  if (out.size() >= plain.size()) return std::nullopt;
  return out;
}

absl::StatusOr<std::string> DecodeStoredPosture(std::string_view stored, std::string_view base,
                                                const std::string& what) {
  if (IsPlainPosture(stored)) return std::string(stored);
  if (stored.size() < 2 || stored[1] != kLz4WithBase) {
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
  const int n = LZ4_decompress_safe_usingDict(
      stored.data() + pos, plain.data(), static_cast<int>(stored.size() - pos),
      static_cast<int>(size), base.data(), static_cast<int>(base.size()));
  if (n < 0 || static_cast<uint64_t>(n) != size) {
    return absl::DataLossError(absl::StrCat("stored posture of ", what, " cannot be decompressed"));
  }
  return plain;
}

}  // namespace smbfleet::collector::pg
