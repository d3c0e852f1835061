#ifndef SMBFLEET_COMMON_APPROVAL_SIGNING_H_
#define SMBFLEET_COMMON_APPROVAL_SIGNING_H_

// Ed25519 keys and the canonical bytes an approval signs. Shared by smbfleetctl (signs), the
// collector (checks and forwards) and the agent (verifies and applies), so that all three agree
// on every byte. The format is in docs/threat-model.md.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/merkle.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet {

// trust.proto ApprovalPayload: v1 lists every host; v2 commits to them with a Merkle tree head.
inline constexpr absl::string_view kApprovalFormatV1 = "smbfleet-approval-v1";
inline constexpr absl::string_view kApprovalFormatV2 = "smbfleet-approval-v2";

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

// The bytes approvers sign. A v2 payload (format set to kApprovalFormatV2) must have no hosts, a
// 32-byte hosts_root and a host_count; any other is v1: format set to kApprovalFormatV1, hosts
// sorted by name and each host's settings by (setting, share). INVALID_ARGUMENT names the field
// when the payload lacks a change id, a nonce, a not-after or hosts, names a host twice, or
// mixes the two formats.
absl::StatusOr<std::string> CanonicalApprovalPayload(v1::ApprovalPayload payload);

// Parses payload bytes an order carries and checks they are canonical (re-encoding gives the
// same bytes), so that one approval has exactly one encoding.
absl::StatusOr<v1::ApprovalPayload> ParseApprovalPayload(absl::string_view bytes);

// A host's order as a v2 tree leaf: settings sorted by (setting, share), deterministic bytes.
// INVALID_ARGUMENT when it names no host.
absl::StatusOr<std::string> CanonicalHostOrder(v1::HostOrder host);

// The hosts of a v2 payload and their Merkle tree (common/merkle.h): the leaves are
// MerkleLeafHash(CanonicalHostOrder(host)) in host order. Built once per change, it gives the
// payload's hosts_root and every host's inclusion proof.
class ApprovalHostTree {
 public:
  // Sorts `hosts` by name; INVALID_ARGUMENT when there are none, or one is empty or repeated.
  static absl::StatusOr<ApprovalHostTree> Build(std::vector<v1::HostOrder> hosts);

  const std::string& root() const { return tree_.root(); }
  size_t size() const { return hosts_.size(); }
  const std::vector<v1::HostOrder>& hosts() const { return hosts_; }  // sorted by host
  std::optional<size_t> IndexOf(absl::string_view host) const;
  const std::string& CanonicalAt(size_t index) const { return canonical_[index]; }
  std::vector<std::string> ProofAt(size_t index) const { return tree_.InclusionProof(index); }

 private:
  ApprovalHostTree(std::vector<v1::HostOrder> hosts, std::vector<std::string> canonical,
                   MerkleTree tree)
      : hosts_(std::move(hosts)), canonical_(std::move(canonical)), tree_(std::move(tree)) {}

  std::vector<v1::HostOrder> hosts_;
  std::vector<std::string> canonical_;
  MerkleTree tree_;
};

// OK when `host_order` (CanonicalHostOrder bytes) is leaf `index` of the v2 `payload`'s tree,
// as `proof` shows; else PERMISSION_DENIED naming what does not hold.
absl::Status VerifyHostOrderInclusion(const v1::ApprovalPayload& payload,
                                      absl::string_view host_order, size_t index,
                                      const std::vector<std::string>& proof);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_APPROVAL_SIGNING_H_
