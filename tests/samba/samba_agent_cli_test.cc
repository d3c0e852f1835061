// `smbfleet-agent collect --once --source=samba:SMB_CONF --format=json` against a real smbd:
// the product contract's JSON (protobuf JSON mapping, lowerCamelCase, enums by name).

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

using nlohmann::json;

TEST(SambaAgentCliTest, CollectOnceReportsWhatSmbstatusAndTestparmSay) {
  auto lab = SambaLab::Start({"server min protocol = NT1\n", {{"finance", "smb encrypt = required\n"}}});
  ASSERT_TRUE(lab.ok()) << lab.status();
  SambaLab& l = **lab;
  ASSERT_TRUE(l.Hold("signed", "demo", {"--client-protection=sign"}).ok());
  ASSERT_TRUE(l.Hold("encrypted", "finance").ok());
  ASSERT_TRUE(l.Hold("smb1", "demo", Smb1ClientOptions()).ok());

  agent::Command c;
  c.argv = {SMBFLEET_AGENT_BINARY, "collect", "--once", "--source=samba:" + l.smb_conf(),
            "--format=json"};
  c.env = l.Options().env;  // nss_wrapper, so that smbstatus resolves the lab user
  c.timeout = std::chrono::seconds(60);
  auto r = l.runner()->Run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->stderr_data;
  json doc = json::parse(r->stdout_data, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r->stdout_data;

  EXPECT_EQ(doc["host"]["platform"], "PLATFORM_SAMBA");
  EXPECT_EQ(doc["host"]["sambaVersion"].get<std::string>().substr(0, 2), "4.");
  EXPECT_EQ(doc["server"]["smb1Enabled"], true);
  EXPECT_EQ(doc["server"]["minDialect"], "DIALECT_SMB1");
  ASSERT_EQ(doc["shares"].size(), 2u);
  EXPECT_EQ(doc["shares"][1]["name"], "finance");
  EXPECT_EQ(doc["shares"][1]["encryptData"], true);
  ASSERT_EQ(doc["sessions"].size(), 3u) << doc.dump(2);
  std::multiset<std::string> seen;
  for (const json& s : doc["sessions"]) {
    ASSERT_EQ(s["shares"].size(), 1u);
    const json& tcon = s["shares"][0];
    seen.insert(s["dialect"].get<std::string>() + " " + tcon["name"].get<std::string>() + " " +
                tcon.value("signing", "") + " " + tcon.value("encryption", ""));
  }
  EXPECT_THAT(seen, ::testing::UnorderedElementsAre(
                        "DIALECT_SMB1 demo PROTECTION_NONE PROTECTION_NONE",
                        "DIALECT_SMB_3_1_1 demo PROTECTION_FULL PROTECTION_NONE",
                        "DIALECT_SMB_3_1_1 finance PROTECTION_FULL PROTECTION_FULL"));
}

}  // namespace
}  // namespace smbfleet::testing
