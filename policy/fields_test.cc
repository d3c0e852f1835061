#include "policy/fields.h"

#include "gtest/gtest.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::Posture;

TEST(FieldsTest, TableIsInEnumOrderAndNamesAreUnique) {
  for (size_t i = 0; i < AllFields().size(); ++i) {
    const FieldInfo& f = AllFields()[i];
    EXPECT_EQ(static_cast<size_t>(f.field), i) << f.name;
    EXPECT_EQ(LookupField(f.name), &f) << f.name;
  }
  EXPECT_EQ(LookupField("server.bogus"), nullptr);
}

TEST(FieldsTest, UnsetIsUnknownNotFalse) {
  Posture p;
  EXPECT_FALSE(ReadHostField(Field::kServerRequireSigning, p).known);
  p.mutable_server()->set_require_signing(false);
  Observed v = ReadHostField(Field::kServerRequireSigning, p);
  EXPECT_TRUE(v.known);
  EXPECT_EQ(v.value, 0u);
}

TEST(FieldsTest, NullSessionSharesNeedTheKnownFlag) {
  Posture p;
  EXPECT_FALSE(ReadHostField(Field::kServerNullSessionShares, p).known);
  p.mutable_server()->set_null_session_shares_known(true);
  Observed v = ReadHostField(Field::kServerNullSessionShares, p);
  EXPECT_TRUE(v.known);
  EXPECT_EQ(v.value, 0u);
  p.mutable_server()->add_null_session_shares("COMCFG");
  EXPECT_EQ(ReadHostField(Field::kServerNullSessionShares, p).value, 1u);
  EXPECT_EQ(FormatObserved(InfoOf(Field::kServerNullSessionShares),
                           ReadHostField(Field::kServerNullSessionShares, p), p),
            "[COMCFG]");
}

struct EncCase {
  const char* name;
  int share_encrypt;   // -1 unset, 0, 1
  int server_encrypt;  // -1 unset, 0, 1
  int reject;          // -1 unset, 0, 1
  int want_encrypted;  // -1 unknown
  int want_rejects;
};

TEST(FieldsTest, ComputedShareEncryptionOnWindows) {
  const EncCase cases[] = {
      {"share on", 1, 0, 1, 1, 1},         {"server-wide on", 0, 1, 1, 1, 1},
      {"both off", 0, 0, 1, 0, 0},         {"on but reject off", 1, 0, 0, 1, 0},
      {"share unknown", -1, 0, 1, -1, -1}, {"reject unknown", 1, 0, -1, 1, -1},
  };
  for (const EncCase& c : cases) {
    Posture p;
    p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_WINDOWS);
    auto* s = p.add_shares();
    s->set_name("Finance");
    if (c.share_encrypt >= 0) s->set_encrypt_data(c.share_encrypt == 1);
    if (c.server_encrypt >= 0) p.mutable_server()->set_encrypt_data(c.server_encrypt == 1);
    if (c.reject >= 0) p.mutable_server()->set_reject_unencrypted_access(c.reject == 1);
    Observed enc = ReadShareField(Field::kShareEncrypted, p, *s);
    Observed rej = ReadShareField(Field::kShareRejectsUnencrypted, p, *s);
    EXPECT_EQ(enc.known ? static_cast<int>(enc.value) : -1, c.want_encrypted) << c.name;
    EXPECT_EQ(rej.known ? static_cast<int>(rej.value) : -1, c.want_rejects) << c.name;
  }
}

TEST(FieldsTest, SambaRejectsOnlyWhenEncryptionRequired) {
  Posture p;
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  p.mutable_server()->set_encrypt_data(false);
  auto* s = p.add_shares();
  s->set_name("backup");
  s->set_encrypt_data(true);
  (*s->mutable_raw())["smb encrypt"] = "desired";
  EXPECT_EQ(ReadShareField(Field::kShareRejectsUnencrypted, p, *s).value, 0u);
  (*s->mutable_raw())["smb encrypt"] = "required";
  Observed v = ReadShareField(Field::kShareRejectsUnencrypted, p, *s);
  EXPECT_TRUE(v.known);
  EXPECT_EQ(v.value, 1u);
}

TEST(FieldsTest, DialectNamesRoundTrip) {
  smbfleet::v1::Dialect d;
  ASSERT_TRUE(ParseDialectName("smb_3_1_1", &d));
  EXPECT_EQ(d, smbfleet::v1::DIALECT_SMB_3_1_1);
  ASSERT_TRUE(ParseDialectName("DIALECT_SMB_2_1", &d));
  EXPECT_EQ(DialectName(d), "SMB_2_1");
  EXPECT_FALSE(ParseDialectName("3.1.1", &d));
}

}  // namespace
}  // namespace smbfleet::policy
