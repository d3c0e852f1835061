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

TEST(FieldsTest, CisFieldsReadTheirPostureFields) {
  Posture p;
  for (Field f : {Field::kServerAutoDisconnectTimeoutMinutes, Field::kServerEnableForcedLogoff,
                  Field::kServerNullSessionPipes, Field::kServerRestrictNullSessionAccess,
                  Field::kClientEnablePlainTextPassword, Field::kClientHardenedUncNetlogon,
                  Field::kClientHardenedUncSysvol}) {
    EXPECT_FALSE(ReadHostField(f, p).known) << InfoOf(f).name;
  }
  auto* s = p.mutable_server();
  s->set_auto_disconnect_timeout_minutes(15);
  s->set_enable_forced_logoff(false);
  s->set_restrict_null_session_access(true);
  p.mutable_client()->set_enable_plain_text_password(false);
  EXPECT_EQ(ReadHostField(Field::kServerAutoDisconnectTimeoutMinutes, p).value, 15u);
  EXPECT_TRUE(ReadHostField(Field::kServerEnableForcedLogoff, p).known);
  EXPECT_EQ(ReadHostField(Field::kServerEnableForcedLogoff, p).value, 0u);
  EXPECT_EQ(ReadHostField(Field::kServerRestrictNullSessionAccess, p).value, 1u);
  EXPECT_TRUE(ReadHostField(Field::kClientEnablePlainTextPassword, p).known);
  EXPECT_EQ(ReadHostField(Field::kClientEnablePlainTextPassword, p).value, 0u);
  EXPECT_EQ(LookupField("server.nullSessionPipes")->type, FieldType::kList);
  EXPECT_EQ(LookupField("client.hardenedUncSysvol")->probe, ProbeGroup::kClient);
}

TEST(FieldsTest, NullSessionPipesNeedTheKnownFlag) {
  Posture p;
  p.mutable_server()->set_null_session_pipes_known(true);
  Observed v = ReadHostField(Field::kServerNullSessionPipes, p);
  EXPECT_TRUE(v.known);
  EXPECT_EQ(v.value, 0u);
  p.mutable_server()->add_null_session_pipes("LSARPC");
  p.mutable_server()->add_null_session_pipes("SAMR");
  EXPECT_EQ(ReadHostField(Field::kServerNullSessionPipes, p).value, 2u);
  std::vector<absl::string_view> items;
  ReadListField(Field::kServerNullSessionPipes, p, &items);
  EXPECT_EQ(items, (std::vector<absl::string_view>{"LSARPC", "SAMR"}));
  EXPECT_EQ(FormatObserved(InfoOf(Field::kServerNullSessionPipes),
                           ReadHostField(Field::kServerNullSessionPipes, p), p),
            "[LSARPC, SAMR]");
  EXPECT_TRUE(ListVocabulary(Field::kServerNullSessionPipes).empty());
}

TEST(FieldsTest, HardenedUncPathsListWhatTheEntryRequires) {
  Posture p;
  auto* c = p.mutable_client();
  c->set_hardened_paths_known(true);
  Observed v = ReadHostField(Field::kClientHardenedUncNetlogon, p);
  EXPECT_TRUE(v.known);  // read, and no entry: nothing required
  EXPECT_EQ(v.value, 0u);
  auto* netlogon = c->add_hardened_paths();
  netlogon->set_path("\\\\*\\netlogon");  // the path compares without regard to case
  netlogon->set_require_mutual_authentication(true);
  netlogon->set_require_integrity(true);
  netlogon->set_require_privacy(false);
  auto* sysvol = c->add_hardened_paths();
  sysvol->set_path("\\\\*\\SYSVOL");
  sysvol->set_require_privacy(true);  // unnamed requirements are not required
  std::vector<absl::string_view> items;
  ReadListField(Field::kClientHardenedUncNetlogon, p, &items);
  EXPECT_EQ(items, (std::vector<absl::string_view>{"mutualAuthentication", "integrity"}));
  EXPECT_EQ(ReadHostField(Field::kClientHardenedUncNetlogon, p).value, 2u);
  ReadListField(Field::kClientHardenedUncSysvol, p, &items);
  EXPECT_EQ(items, (std::vector<absl::string_view>{"privacy"}));
  EXPECT_EQ(FormatObserved(InfoOf(Field::kClientHardenedUncSysvol),
                           ReadHostField(Field::kClientHardenedUncSysvol, p), p),
            "[privacy]");
  EXPECT_EQ(ListVocabulary(Field::kClientHardenedUncSysvol).size(), 3u);

  // Entries without the known flag still count as read.
  c->clear_hardened_paths_known();
  EXPECT_TRUE(ReadHostField(Field::kClientHardenedUncSysvol, p).known);
  c->clear_hardened_paths();
  EXPECT_FALSE(ReadHostField(Field::kClientHardenedUncSysvol, p).known);
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
