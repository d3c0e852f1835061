#include "common/merkle.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

using ::testing::HasSubstr;

// RFC 9162 section 2.1.1 and 2.1.3.1 written as the RFC states them, recursively, to check
// the level-by-level build against.
size_t LargestPowerOfTwoBelow(size_t n) {
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

std::string RfcTreeHash(const std::vector<std::string>& leaves, size_t begin, size_t end) {
  if (end - begin == 1) return leaves[begin];
  const size_t k = LargestPowerOfTwoBelow(end - begin);
  return MerkleNodeHash(RfcTreeHash(leaves, begin, begin + k), RfcTreeHash(leaves, begin + k, end));
}

std::vector<std::string> RfcPath(size_t m, const std::vector<std::string>& leaves, size_t begin,
                                 size_t end) {
  if (end - begin == 1) return {};
  const size_t k = LargestPowerOfTwoBelow(end - begin);
  std::vector<std::string> path;
  if (m < k) {
    path = RfcPath(m, leaves, begin, begin + k);
    path.push_back(RfcTreeHash(leaves, begin + k, end));
  } else {
    path = RfcPath(m - k, leaves, begin + k, end);
    path.push_back(RfcTreeHash(leaves, begin, begin + k));
  }
  return path;
}

std::vector<std::string> Leaves(size_t n) {
  std::vector<std::string> leaves;
  for (size_t i = 0; i < n; ++i) leaves.push_back(MerkleLeafHash(absl::StrCat("host", i)));
  return leaves;
}

TEST(MerkleTest, HashesArePrefixedAsRfc9162Says) {
  // SHA-256 of the single byte 0x00: the leaf hash of empty data (RFC 9162 test vectors).
  EXPECT_EQ(absl::BytesToHexString(MerkleLeafHash("")),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
  EXPECT_NE(MerkleLeafHash(std::string(64, 'a')),
            MerkleNodeHash(std::string(32, 'a'), std::string(32, 'a')));
}

TEST(MerkleTest, RootAndEveryProofMatchTheRecursiveDefinitionAndVerify) {
  for (size_t n = 1; n <= 70; ++n) {
    const std::vector<std::string> leaves = Leaves(n);
    MerkleTree tree(leaves);
    ASSERT_EQ(tree.size(), n);
    ASSERT_EQ(tree.root(), RfcTreeHash(leaves, 0, n)) << n << " leaves";
    for (size_t i = 0; i < n; ++i) {
      const std::vector<std::string> proof = tree.InclusionProof(i);
      ASSERT_EQ(proof, RfcPath(i, leaves, 0, n)) << "leaf " << i << " of " << n;
      EXPECT_TRUE(VerifyMerkleInclusion(leaves[i], i, n, proof, tree.root()).ok())
          << "leaf " << i << " of " << n;
    }
  }
}

TEST(MerkleTest, ProofsGrowWithTheLogarithmOfTheLeaves) {
  MerkleTree tree(Leaves(100'000));
  EXPECT_LE(tree.InclusionProof(0).size(), 17U);
  EXPECT_LE(tree.InclusionProof(99'999).size(), 17U);
}

TEST(MerkleTest, AnyChangeToLeafIndexSizeProofOrRootFails) {
  const size_t n = 13;
  const std::vector<std::string> leaves = Leaves(n);
  MerkleTree tree(leaves);
  const size_t i = 6;
  const std::vector<std::string> proof = tree.InclusionProof(i);
  ASSERT_TRUE(VerifyMerkleInclusion(leaves[i], i, n, proof, tree.root()).ok());

  EXPECT_THAT(VerifyMerkleInclusion(leaves[i + 1], i, n, proof, tree.root()).message(),
              HasSubstr("another tree head"));  // another leaf
  EXPECT_FALSE(VerifyMerkleInclusion(leaves[i], i + 1, n, proof, tree.root()).ok());
  // A tree of another shape. (Some other sizes give leaf 6 the same path: the size is
  // authenticated by the signed payload's host_count, not by the proof.)
  EXPECT_FALSE(VerifyMerkleInclusion(leaves[i], i, 8, proof, tree.root()).ok());
  EXPECT_THAT(VerifyMerkleInclusion(leaves[i], n, n, proof, tree.root()).message(),
              HasSubstr("not below the tree size"));
  std::vector<std::string> bent = proof;
  bent[1][0] = static_cast<char>(bent[1][0] ^ 1);
  EXPECT_FALSE(VerifyMerkleInclusion(leaves[i], i, n, bent, tree.root()).ok());
  std::vector<std::string> shorter(proof.begin(), proof.end() - 1);
  EXPECT_THAT(VerifyMerkleInclusion(leaves[i], i, n, shorter, tree.root()).message(),
              HasSubstr("shorter"));
  std::vector<std::string> longer = proof;
  longer.push_back(leaves[0]);
  EXPECT_THAT(VerifyMerkleInclusion(leaves[i], i, n, longer, tree.root()).message(),
              HasSubstr("longer"));
  std::vector<std::string> truncated = proof;
  truncated[0].resize(31);
  EXPECT_THAT(VerifyMerkleInclusion(leaves[i], i, n, truncated, tree.root()).message(),
              HasSubstr("32 bytes"));
  EXPECT_FALSE(VerifyMerkleInclusion(leaves[i], i, n, proof, leaves[0]).ok());
}

TEST(MerkleTest, OneLeafIsItsOwnRootWithAnEmptyProof) {
  const std::vector<std::string> leaves = Leaves(1);
  MerkleTree tree(leaves);
  EXPECT_EQ(tree.root(), leaves[0]);
  EXPECT_TRUE(tree.InclusionProof(0).empty());
  EXPECT_TRUE(VerifyMerkleInclusion(leaves[0], 0, 1, {}, tree.root()).ok());
}

}  // namespace
}  // namespace smbfleet
