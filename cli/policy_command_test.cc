#include <fstream>
#include <sstream>

#include "cli/run.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::cli {
namespace {

const std::string kBaseline = std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml";

std::string Write(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/policy_command_test_" + name;
  std::ofstream(path) << text;
  return path;
}

struct CallResult {
  int rc;
  std::string out;
  std::string err;
};

CallResult Call(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::vector<std::string> argv = {"policy"};
  argv.insert(argv.end(), args.begin(), args.end());
  StubFactory no_collector = [](const GlobalFlags&) {
    ADD_FAILURE() << "policy commands never call the collector";
    return absl::StatusOr<std::unique_ptr<smbfleet::v1::AdminService::StubInterface>>(
        absl::UnavailableError("no collector in this test"));
  };
  int rc = RunCommandLine(argv, no_collector, out, err);
  return CallResult{rc, out.str(), err.str()};
}

constexpr char kFs01[] = R"({
  "host": {"hostname": "fs01", "platform": "PLATFORM_WINDOWS", "osVersion": "10.0.20348"},
  "server": {"smb1Enabled": false, "requireSigning": false, "encryptData": false,
             "rejectUnencryptedAccess": true, "nameHardeningLevel": 1,
             "nullSessionSharesKnown": true},
  "client": {"smb1Enabled": false, "requireSigning": true, "enableInsecureGuestLogons": false},
  "shares": [{"name": "Finance", "path": "D:\\Finance", "encryptData": true}],
  "sessions": [{"sessionId": "7", "clientAddress": "10.0.0.9", "clientName": "KIOSK",
                "user": "Guest", "guest": true, "dialect": "DIALECT_SMB_3_1_1"}]
})";

constexpr char kWs17[] = R"({
  "host": {"hostname": "ws17", "platform": "PLATFORM_WINDOWS", "osVersion": "10.0.26100"},
  "connections": [{"serverName": "fs01", "shareName": "Finance", "user": "CORP\\carl",
                   "dialect": "DIALECT_SMB_3_1_1", "signed": false, "encrypted": false}]
})";

TEST(PolicyCommandTest, CheckAcceptsTheBaseline) {
  CallResult r = Call({"check", kBaseline});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("OK: policy baseline"), std::string::npos) << r.out;
}

TEST(PolicyCommandTest, CheckReportsFileLineAndExpectation) {
  std::string bad = Write("bad.yaml",
                          "apiVersion: smbfleet/policy/v1\nname: b\nversion: '1'\n"
                          "rules:\n  - id: x\n    title: X\n"
                          "    expect: {server.requireSigning: perhaps}\n");
  CallResult r = Call({"check", bad});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(bad + ":7: rules[0].expect.server.requireSigning"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("expected true or false"), std::string::npos) << r.err;
  CallResult missing = Call({"check", "/nonexistent/p.yaml"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("/nonexistent/p.yaml"), std::string::npos) << missing.err;
}

TEST(PolicyCommandTest, EvalJsonIsTheProtobufMapping) {
  std::string posture = Write("fs01.json", kFs01);
  CallResult r = Call({"eval", "--policy", kBaseline, "--posture", posture, "--format=json",
                       "--now", "2026-12-01T00:00:00Z"});
  ASSERT_EQ(r.rc, 0) << r.err;
  smbfleet::v1::PolicyReport report;
  ASSERT_TRUE(FromJson(r.out, "output", &report).ok()) << r.out;
  EXPECT_EQ(report.evaluation().hostname(), "fs01");
  EXPECT_EQ(report.evaluation().evaluated_at().seconds(), 1796083200);
  bool signing = false;
  for (const auto& res : report.evaluation().results()) {
    if (res.rule_id() == "server-signing-required") {
      signing = true;
      EXPECT_EQ(res.status(), smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT);
    }
  }
  EXPECT_TRUE(signing);
  EXPECT_NE(r.out.find("\"status\": \"COMPLIANCE_STATUS_NON_COMPLIANT\""), std::string::npos);
  ASSERT_GT(report.plan().steps_size(), 0);
  EXPECT_EQ(report.plan().steps(0).setting(), "server.requireSigning");
  ASSERT_GT(report.plan().impact().clients_size(), 0);
  EXPECT_EQ(report.plan().impact().clients(0).client_name(), "KIOSK");
}

TEST(PolicyCommandTest, EvalUsesOtherPosturesAsPeersAndWaivers) {
  std::string fs01 = Write("fs01b.json", kFs01);
  std::string ws17 = Write("ws17.json", kWs17);
  std::string waivers = Write("waivers.json", R"({"waivers": [{
      "id": "W-1", "ruleId": "server-signing-required", "host": "fs01",
      "justification": "kiosk replacement in January", "approvedBy": "ciso",
      "expiresAt": "2026-12-15T00:00:00Z"}]})");
  CallResult r = Call({"eval", "--policy", kBaseline, "--posture", fs01, "--posture", ws17,
                       "--format=json", "--now=2026-12-01T00:00:00Z"});
  ASSERT_EQ(r.rc, 0) << r.err;
  smbfleet::v1::PolicyReports reports;
  ASSERT_TRUE(FromJson(r.out, "output", &reports).ok()) << r.out;
  ASSERT_EQ(reports.reports_size(), 2);
  bool peer = false;
  for (const auto& c : reports.reports(0).plan().impact().clients()) {
    if (c.source() == smbfleet::v1::IMPACT_SOURCE_PEER_CONNECTION && c.reporter() == "ws17") {
      peer = true;
    }
  }
  EXPECT_TRUE(peer) << r.out;

  CallResult waived = Call({"eval", "--policy", kBaseline, "--posture", fs01, "--waivers", waivers,
                            "--now", "2026-12-01T00:00:00Z"});
  ASSERT_EQ(waived.rc, 0) << waived.err;
  EXPECT_NE(waived.out.find("WAIVED         server-signing-required"), std::string::npos)
      << waived.out;
  CallResult expired = Call({"eval", "--policy", kBaseline, "--posture", fs01, "--waivers", waivers,
                             "--now", "2026-12-16T00:00:00Z"});
  EXPECT_NE(expired.out.find("NON_COMPLIANT  server-signing-required"), std::string::npos)
      << expired.out;
  EXPECT_NE(expired.out.find("plan for fs01"), std::string::npos) << expired.out;
}

TEST(PolicyCommandTest, BadInputIsAClearError) {
  std::string broken = Write("broken.json", "{\"host\": {\"hostname\": ");
  CallResult r = Call({"eval", "--policy", kBaseline, "--posture", broken});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(broken), std::string::npos) << r.err;
  std::string unknown = Write("unknown.json", "{\"host\": {\"hostname\": \"x\"}, \"colour\": 1}");
  r = Call({"eval", "--policy", kBaseline, "--posture", unknown});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
  std::string bad_waiver = Write("badwaiver.json", R"({"waivers": [{"id": "W", "ruleId": "*",
      "host": "fs01", "justification": "j", "expiresAt": "2027-01-01T00:00:00Z"}]})");
  std::string fs01 = Write("fs01c.json", kFs01);
  r = Call({"eval", "--policy", kBaseline, "--posture", fs01, "--waivers", bad_waiver});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("approvedBy"), std::string::npos) << r.err;
}

TEST(PolicyCommandTest, UsageErrors) {
  EXPECT_EQ(Call({}).rc, 2);
  EXPECT_EQ(Call({"frobnicate"}).rc, 2);
  EXPECT_EQ(Call({"eval", "--posture", "p.json"}).rc, 2);
  EXPECT_EQ(Call({"eval", "--policy", kBaseline}).rc, 2);
  EXPECT_EQ(Call({"eval", "--policy", kBaseline, "--posture", "p", "--format=xml"}).rc, 2);
  EXPECT_EQ(Call({"eval", "--policy", kBaseline, "--posture", "p", "--now", "yesterday"}).rc, 2);
  EXPECT_EQ(Call({"check"}).rc, 2);
}

}  // namespace
}  // namespace smbfleet::cli
