#include "collector/store/postgres/posture_codec.h"

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
  // Another base than the one it was made with does not give the posture back.
  auto wrong = DecodeStoredPosture(delta, PlainPosture(20, 9), "fs01");
  EXPECT_TRUE(!wrong.ok() || *wrong != PlainPosture(20, 2));
}

}  // namespace
}  // namespace smbfleet::collector::pg
