#ifndef SMBFLEET_COMMON_MERKLE_H_
#define SMBFLEET_COMMON_MERKLE_H_

// A Merkle tree as RFC 9162 section 2.1 defines it (the Certificate Transparency tree), with
// SHA-256: leaf hash SHA-256(0x00 || data), node hash SHA-256(0x01 || left || right), a tree of
// n leaves split at the largest power of two below n. An approval of a change signs the tree
// head over its hosts' orders; each host's order carries its inclusion proof, which grows with
// log2(hosts) (docs/threat-model.md, "What an approval signs").

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace smbfleet {

inline constexpr size_t kMerkleHashSize = 32;

// SHA-256(0x00 || data).
std::string MerkleLeafHash(absl::string_view data);
// SHA-256(0x01 || left || right).
std::string MerkleNodeHash(absl::string_view left, absl::string_view right);

// The tree over leaf hashes, kept level by level: the root and every leaf's inclusion proof
// from one build, O(n) hashes. At each level an unpaired last node moves up unchanged, which
// gives the same tree as the RFC's recursive split.
class MerkleTree {
 public:
  // `leaf_hashes` must not be empty; each is kMerkleHashSize bytes.
  explicit MerkleTree(std::vector<std::string> leaf_hashes);

  size_t size() const { return levels_.front().size(); }
  const std::string& root() const { return levels_.back().front(); }
  // The sibling hashes from leaf `index` up to the root (RFC 9162 section 2.1.3.1).
  // `index` < size().
  std::vector<std::string> InclusionProof(size_t index) const;

 private:
  std::vector<std::vector<std::string>> levels_;  // levels_[0]: the leaves; back(): the root
};

// RFC 9162 section 2.1.3.2: OK when `proof` shows the leaf with hash `leaf_hash` at `index` of a
// tree of `size` leaves whose head is `root`; else PERMISSION_DENIED naming what does not hold.
absl::Status VerifyMerkleInclusion(absl::string_view leaf_hash, size_t index, size_t size,
                                   const std::vector<std::string>& proof, absl::string_view root);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_MERKLE_H_
