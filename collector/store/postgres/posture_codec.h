#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_CODEC_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_CODEC_H_

// How `postures.posture` holds a posture's binary (migration 0019). Two forms:
//   plain  the serialised smbfleet.v1.Posture: every row stored before 0019, a host's first
//          posture of each UTC day (its day's base), and a posture the other form does not make
//          smaller. PostgreSQL compresses it (pglz) when the row is large.
//   delta  0x00 (no serialised message starts with a zero byte: field number 0 does not
//          exist), a form byte, the plain size as a varint, and the compressed bytes, made
//          with the base's plain bytes as their dictionary:
//            0x02  a zstd frame, the base its prefix (what is written);
//            0x01  an LZ4 block (what collectors wrote first; read, no longer written).
//          The row names its base in base_id and base_stored_at: the same host's plain
//          posture of the same UTC day, so a day partition holds both and the history job
//          drops them together.
// A host's postures of one day repeat its settings, shares, and the shape of its sessions
// (field tags, dialects, ciphers, user and client names), so the base makes the block about
// half of what a posture compressed alone takes, and zstd's entropy coding takes the new
// sessions' numbers and names smaller than LZ4 does (docs/scaling.md "History per host per day").

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace smbfleet::collector::pg {

// True when `stored` is a plain posture (an empty one too): it needs no base.
bool IsPlainPosture(std::string_view stored);

// The delta form of `plain` against `base` (a plain posture), or nullopt when it would not be
// smaller than `plain` (or either is empty).
std::optional<std::string> EncodePostureDelta(std::string_view plain, std::string_view base);

// The plain bytes of a stored posture: `stored` itself when plain, else decoded with `base`
// (the stored bytes of the row it names). `what` names the posture in errors.
absl::StatusOr<std::string> DecodeStoredPosture(std::string_view stored, std::string_view base,
                                                const std::string& what);

}  // namespace smbfleet::collector::pg

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_CODEC_H_
