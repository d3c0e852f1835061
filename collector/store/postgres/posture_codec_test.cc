#include "collector/store/postgres/posture_codec.h"

#include <lz4.h>
#include <lz4hc.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector::pg {
namespace {

// A file server's posture with `sessions` sessions whose ids and counters start at `seed`.
std::string PlainPosture(int sessions, int seed) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  p.mutable_server()->set_encrypt_data(true);
  for (int i = 0; i < 5; ++i) {
    auto* share = p.add_shares();
    share->set_name(absl::StrCat("share", i));
    share->set_path(absl::StrCat("/srv/samba/share", i));
  }
  for (int i = 0; i < sessions; ++i) {
    auto* s = p.add_sessions();
    s->set_session_id(absl::StrCat(seed * 7919 + i * 104729));
    s->set_client_address(absl::StrCat("10.20.", (seed + i) % 250, ".", (seed * i) % 250));
    s->set_user(absl::StrCat("LAB\\user", (seed + 3 * i) % 250));
    s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    s->set_signing(smbfleet::v1::PROTECTION_FULL);
    s->set_num_opens(static_cast<uint32_t>((seed + i) % 20));
    s->add_shares()->set_name(absl::StrCat("share", i % 5));
  }
  std::string out;
  EXPECT_TRUE(p.SerializeToString(&out));
  return out;
}

TEST(PostureCodecTest, DeltaReadsBackTheSameBytesAndIsSmaller) {
  const std::string base = PlainPosture(40, 1);
  const std::string plain = PlainPosture(40, 2);
  ASSERT_NE(plain, base);
  auto delta = EncodePostureDelta(plain, base);
  ASSERT_TRUE(delta.has_value());
  EXPECT_FALSE(IsPlainPosture(*delta));
  EXPECT_LT(delta->size(), plain.size() / 2);
  auto back = DecodeStoredPosture(*delta, base, "fs01");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, plain);
  smbfleet::v1::Posture parsed;
  EXPECT_TRUE(parsed.ParseFromString(*back));
  EXPECT_EQ(parsed.sessions_size(), 40);
}

// A delta as collectors wrote them first: 0x00 0x01, the plain size (one varint byte here: under
// 128 bytes, or two), an LZ4 block with the base as its dictionary.
std::string Lz4Delta(const std::string& plain, const std::string& base) {
  LZ4_streamHC_t* stream = LZ4_createStreamHC();
  LZ4_loadDictHC(stream, base.data(), static_cast<int>(base.size()));
  std::string block(static_cast<size_t>(LZ4_compressBound(static_cast<int>(plain.size()))), '\0');
  const int n =
      LZ4_compress_HC_continue(stream, plain.data(), block.data(), static_cast<int>(plain.size()),
                               static_cast<int>(block.size()));
  LZ4_freeStreamHC(stream);
  block.resize(static_cast<size_t>(n));
  std::string out("\x00\x01", 2);
  for (uint64_t v = plain.size();; v >>= 7) {
    if (v < 0x80) {
      out.push_back(static_cast<char>(v));
      break;
    }
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  }
  return out + block;
}

TEST(PostureCodecTest, WritesZstdAndStillReadsTheLz4RowsOfBefore) {
  const std::string base = PlainPosture(40, 1);
  const std::string plain = PlainPosture(40, 2);
  const std::string zstd = *EncodePostureDelta(plain, base);
  EXPECT_EQ(zstd[1], '\x02');
  const std::string lz4 = Lz4Delta(plain, base);
  ASSERT_GT(lz4.size(), 4u);
  // The new sessions' ids, addresses and counters entropy-coded: smaller than LZ4's block.
  EXPECT_LT(zstd.size(), lz4.size());
  auto old_row = DecodeStoredPosture(lz4, base, "fs01");
  ASSERT_TRUE(old_row.ok()) << old_row.status();
  EXPECT_EQ(*old_row, plain);
  std::string damaged = lz4;
  damaged.resize(damaged.size() - 3);
  EXPECT_EQ(DecodeStoredPosture(damaged, base, "fs01").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(PostureCodecTest, PlainPosturesReadAsTheyAre) {
  const std::string plain = PlainPosture(3, 5);
  EXPECT_TRUE(IsPlainPosture(plain));
  EXPECT_TRUE(IsPlainPosture(""));
  auto back = DecodeStoredPosture(plain, "", "fs01");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, plain);
}

TEST(PostureCodecTest, NoDeltaWithoutAPlainBaseOrAGain) {
  const std::string plain = PlainPosture(10, 1);
  EXPECT_FALSE(EncodePostureDelta(plain, "").has_value());
  EXPECT_FALSE(EncodePostureDelta("", plain).has_value());
  const std::string delta = *EncodePostureDelta(plain, PlainPosture(10, 2));
  EXPECT_FALSE(EncodePostureDelta(plain, delta).has_value());        // a delta is no base
  EXPECT_FALSE(EncodePostureDelta("\x0a\x01x", plain).has_value());  // 3 bytes: no gain
}

TEST(PostureCodecTest, DamagedRowsAreErrorsNamingThePosture) {
  const std::string base = PlainPosture(20, 1);
  const std::string delta = *EncodePostureDelta(PlainPosture(20, 2), base);

  auto missing = DecodeStoredPosture(delta, "", "fs01");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(missing.status().message().find("fs01"), std::string::npos);
  EXPECT_NE(missing.status().message().find("base"), std::string::npos);

  std::string unknown_form = delta;
  unknown_form[1] = '\x07';
  EXPECT_EQ(DecodeStoredPosture(unknown_form, base, "fs01").status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeStoredPosture(std::string("\x00\x01", 2), base, "fs01").status().code(),
            absl::StatusCode::kDataLoss);
  // A size over the limit is refused before any allocation.
  EXPECT_EQ(DecodeStoredPosture(std::string("\x00\x01\xff\xff\xff\xff\x7f", 7), base, "fs01")
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
  std::string truncated = delta.substr(0, delta.size() - 5);
  EXPECT_EQ(DecodeStoredPosture(truncated, base, "fs01").status().code(),
            absl::StatusCode::kDataLoss);
  // Another base than the one it was made with is an error (the frame's checksum), not another
  // posture; so is a flipped byte in the frame.
  EXPECT_EQ(DecodeStoredPosture(delta, PlainPosture(20, 9), "fs01").status().code(),
            absl::StatusCode::kDataLoss);
  std::string flipped = delta;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
  EXPECT_EQ(DecodeStoredPosture(flipped, base, "fs01").status().code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace smbfleet::collector::pg
