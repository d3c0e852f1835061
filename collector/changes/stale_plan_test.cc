#include "collector/changes/stale_plan.h"

#include <functional>
#include <optional>

#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::v1::Posture;
using smbfleet::v1::RemediationPlan;

// What fs1 looked like when the plan was made.
Posture Planned() {
  Posture p;
  p.mutable_host()->set_hostname("fs1");
  p.mutable_server()->set_require_signing(false);
  p.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
  auto* share = p.add_shares();
  share->set_name("finance");
  share->set_encrypt_data(false);
  return p;
}

RemediationPlan Plan(const std::string& host) {
  RemediationPlan plan;
  plan.set_hostname(host);
  auto add = [&](const std::string& setting, const std::string& share, const std::string& expected,
                 const std::string& value) {
    auto* step = plan.add_steps();
    step->set_setting(setting);
    step->set_share(share);
    step->set_expected_current(expected);
    step->set_value(value);
  };
  add("share.encryptData", "finance", "false", "true");
  add("server.requireSigning", "", "false", "true");
  add("server.minDialect", "", "SMB_2_0_2", "SMB_3_0");
  add("server.auditSmb1Access", "", "", "true");  // unknown when planned: not checked
  return plan;
}

TEST(FindStaleSettingTest, NamesTheFirstHostAndSettingThatMovedOn) {
  struct Case {
    std::string name;
    std::function<void(Posture&)> edit;  // what changed on fs2 since planning
    std::optional<StaleSetting> want;
  };
  const std::vector<Case> cases = {
      {"unchanged", [](Posture&) {}, std::nullopt},
      {"an unrelated setting changed",
       [](Posture& p) { p.mutable_server()->set_smb1_enabled(true); }, std::nullopt},
      {"a setting the plan did not know is now known",
       [](Posture& p) { p.mutable_server()->set_audit_smb1_access(true); }, std::nullopt},
      // The plan compares the share's own flag, not whether the share ends up encrypted.
      {"server-wide encryption leaves the share's own flag as planned",
       [](Posture& p) { p.mutable_server()->set_encrypt_data(true); }, std::nullopt},
      {"signing was turned on by hand",
       [](Posture& p) { p.mutable_server()->set_require_signing(true); },
       StaleSetting{"fs2", "server.requireSigning", "", "false", "true"}},
      {"the dialect floor moved",
       [](Posture& p) { p.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_0); },
       StaleSetting{"fs2", "server.minDialect", "", "SMB_2_0_2", "SMB_3_0"}},
      {"the share is encrypted now",
       [](Posture& p) { p.mutable_shares(0)->set_encrypt_data(true); },
       StaleSetting{"fs2", "share.encryptData", "finance", "false", "true"}},
      {"the share is gone", [](Posture& p) { p.clear_shares(); },
       StaleSetting{"fs2", "share.encryptData", "finance", "false", ""}},
      {"signing is not reported any more",
       [](Posture& p) { p.mutable_server()->clear_require_signing(); },
       StaleSetting{"fs2", "server.requireSigning", "", "false", ""}},
      {"the first step in plan order is named",
       [](Posture& p) {
         p.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_0);
         p.mutable_server()->set_require_signing(true);
       },
       StaleSetting{"fs2", "server.requireSigning", "", "false", "true"}},
  };
  for (const Case& c : cases) {
    Posture fs1 = Planned();
    Posture fs2 = Planned();
    fs2.mutable_host()->set_hostname("fs2");
    c.edit(fs2);
    absl::StatusOr<std::optional<StaleSetting>> got =
        FindStaleSetting({Plan("fs1"), Plan("fs2")}, {{"fs1", &fs1}, {"fs2", &fs2}});
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    ASSERT_EQ(got->has_value(), c.want.has_value()) << c.name;
    if (!c.want.has_value()) continue;
    EXPECT_EQ((*got)->host, c.want->host) << c.name;
    EXPECT_EQ((*got)->setting, c.want->setting) << c.name;
    EXPECT_EQ((*got)->share, c.want->share) << c.name;
    EXPECT_EQ((*got)->expected, c.want->expected) << c.name;
    EXPECT_EQ((*got)->current, c.want->current) << c.name;
  }
}

TEST(FindStaleSettingTest, HostsAreCheckedInPlanOrder) {
  Posture fs1 = Planned();
  fs1.mutable_server()->set_require_signing(true);
  Posture fs2 = Planned();
  fs2.mutable_server()->set_min_dialect(smbfleet::v1::DIALECT_SMB_3_0);
  auto got = FindStaleSetting({Plan("fs2"), Plan("fs1")}, {{"fs1", &fs1}, {"fs2", &fs2}});
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->host, "fs2");
  EXPECT_EQ((*got)->Describe(),
            "host fs2: server.minDialect is now \"SMB_3_0\", the plan expected \"SMB_2_0_2\"");
}

TEST(FindStaleSettingTest, AHostWithoutPostureIsStale) {
  auto got = FindStaleSetting({Plan("fs1")}, {});
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->Describe(),
            "host fs1 share finance: share.encryptData is unknown now, the plan expected "
            "\"false\"");
}

TEST(FindStaleSettingTest, AnUnknownSettingIsAnError) {
  RemediationPlan plan;
  plan.set_hostname("fs1");
  plan.add_steps()->set_setting("server.formatDisk");
  Posture fs1 = Planned();
  auto got = FindStaleSetting({plan}, {{"fs1", &fs1}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(std::string(got.status().message()).find("server.formatDisk"), std::string::npos)
      << got.status();
}

}  // namespace
}  // namespace smbfleet::collector::changes
