#ifndef SMBFLEET_COMMON_APPROVAL_SIGNING_H_
#define SMBFLEET_COMMON_APPROVAL_SIGNING_H_

// Ed25519 keys and the canonical bytes an approval signs. Shared by smbfleetctl (signs), the
// collector (checks and forwards) and the agent (verifies and applies), so that all three agree
// on every byte. The format is in docs/threat-model.md.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet {

inline constexpr absl::string_view kApprovalFormat = "smbfleet-approval-v1";

struct Ed25519Key {
  std::string private_pem;  // PKCS#8 PEM; written 0600, never logged
  std::string public_raw;   // 32 bytes
};

absl::StatusOr<Ed25519Key> GenerateEd25519Key();
// The key in a PKCS#8 PEM (as `smbfleetctl keys init` writes it, or openssl genpkey makes it).
absl::StatusOr<Ed25519Key> Ed25519KeyFromPem(absl::string_view private_pem);

// First 16 hex digits of SHA-256 of the raw public key.
std::string KeyId(absl::string_view public_raw);

// "ed25519:" + base64 of the raw key: how configs and people write a public key.
std::string PublicKeyText(absl::string_view public_raw);
// Parses PublicKeyText; the error names what is wrong with `text` (prefix, base64, length).
absl::StatusOr<std::string> ParsePublicKeyText(absl::string_view text);

absl::StatusOr<std::string> SignEd25519(absl::string_view private_pem, absl::string_view message);
// OK, or PERMISSION_DENIED "signature does not verify" (also for a malformed key or signature).
absl::Status VerifyEd25519(absl::string_view public_raw, absl::string_view message,
                           absl::string_view signature);

// Sorts hosts by name and each host's settings by (setting, share), sets `format`, and returns
// the deterministic serialization. INVALID_ARGUMENT names the field when the payload lacks a
// change id, a nonce, a not-after or hosts, or names a host twice.
absl::StatusOr<std::string> CanonicalApprovalPayload(v1::ApprovalPayload payload);

// Parses payload bytes an order carries and checks they are canonical (re-encoding gives the
// same bytes), so that one approval has exactly one encoding.
absl::StatusOr<v1::ApprovalPayload> ParseApprovalPayload(absl::string_view bytes);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_APPROVAL_SIGNING_H_
