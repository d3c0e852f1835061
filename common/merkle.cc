#include "common/merkle.h"

#include <openssl/sha.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace smbfleet {
namespace {

std::string Sha256Of(char prefix, absl::string_view a, absl::string_view b) {
  const std::string input = absl::StrCat(absl::string_view(&prefix, 1), a, b);
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

}  // namespace

std::string MerkleLeafHash(absl::string_view data) { return Sha256Of('\x00', data, ""); }

std::string MerkleNodeHash(absl::string_view left, absl::string_view right) {
  return Sha256Of('\x01', left, right);
}

MerkleTree::MerkleTree(std::vector<std::string> leaf_hashes) {
  levels_.push_back(std::move(leaf_hashes));
  if (levels_.front().empty()) levels_.front().push_back(MerkleLeafHash(""));  // never used
  while (levels_.back().size() > 1) {
    const std::vector<std::string>& below = levels_.back();
    std::vector<std::string> level;
    level.reserve((below.size() + 1) / 2);
    for (size_t i = 0; i + 1 < below.size(); i += 2) {
      level.push_back(MerkleNodeHash(below[i], below[i + 1]));
    }
    if (below.size() % 2 == 1) level.push_back(below.back());  // unpaired: moves up as it is
    levels_.push_back(std::move(level));
  }
}

std::vector<std::string> MerkleTree::InclusionProof(size_t index) const {
  std::vector<std::string> proof;
  for (size_t level = 0; level + 1 < levels_.size(); ++level) {
    const size_t sibling = index ^ 1U;
    if (sibling < levels_[level].size()) proof.push_back(levels_[level][sibling]);
    index /= 2;
  }
  return proof;
}

absl::Status VerifyMerkleInclusion(absl::string_view leaf_hash, size_t index, size_t size,
                                   const std::vector<std::string>& proof, absl::string_view root) {
  auto refused = [&](absl::string_view why) {
    return absl::PermissionDeniedError(
        absl::StrCat("inclusion proof of leaf ", index, " of ", size, " does not hold: ", why));
  };
  if (index >= size) return refused("the index is not below the tree size");
  size_t fn = index;
  size_t sn = size - 1;
  std::string r(leaf_hash);
  for (const std::string& p : proof) {
    if (p.size() != kMerkleHashSize) return refused("a proof hash is not 32 bytes");
    if (sn == 0) return refused("the proof is longer than the tree is deep");
    if ((fn & 1U) == 1U || fn == sn) {
      r = MerkleNodeHash(p, r);
      while ((fn & 1U) == 0 && fn != 0) {
        fn >>= 1U;
        sn >>= 1U;
      }
    } else {
      r = MerkleNodeHash(r, p);
    }
    fn >>= 1U;
    sn >>= 1U;
  }
  if (sn != 0) return refused("the proof is shorter than the tree is deep");
  if (r != root) return refused("it leads to another tree head");
  return absl::OkStatus();
}

}  // namespace smbfleet
