// Every fixture capture folder (one per Windows Server build) through the capture source, the
// product's JSON output and back, and through the live source + applier with the fake runner.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/windows/applier.h"
#include "agent/platform/windows/testing/fake_powershell_runner.h"
#include "agent/platform/windows/windows_source.h"
#include "common/json.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return absl::StrCat(SMBFLEET_SOURCE_DIR, "/tests/fixtures/windows/", name);
}

class EveryBuild : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryBuild, JsonOutputRoundTripsAndKeepsTheContractNames) {
  auto posture = NewWindowsCaptureSource(Fixture(GetParam()))->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  auto json = ToJson(*posture);
  ASSERT_TRUE(json.ok());
  v1::Posture back;
  ASSERT_TRUE(FromJson(*json, GetParam(), &back).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*posture, back));
  nlohmann::json doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["host"]["platform"], "PLATFORM_WINDOWS");
  EXPECT_TRUE(doc.contains("server"));
  EXPECT_TRUE(doc["server"].contains("requireSigning"));
  EXPECT_TRUE(doc["server"].contains("smb1Enabled"));
  EXPECT_TRUE(doc.contains("shares"));
  for (const auto& s : doc.value("sessions", nlohmann::json::array())) {
    EXPECT_TRUE(s["sessionId"].is_string()) << "ids beyond 2^53 travel as strings";
  }
}

TEST_P(EveryBuild, LiveSourceOverTheSameOutputAgrees) {
  testing::FakePowerShellRunner runner(Fixture(GetParam()));
  auto live = NewWindowsLiveSource({}, &runner)->Collect();
  auto capture = NewWindowsCaptureSource(Fixture(GetParam()))->Collect();
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(capture.ok());
  using google::protobuf::util::MessageDifferencer;
  EXPECT_TRUE(MessageDifferencer::Equals(live->server(), capture->server()));
  EXPECT_TRUE(MessageDifferencer::Equals(live->client(), capture->client()));
  EXPECT_EQ(live->shares_size(), capture->shares_size());
  EXPECT_EQ(live->sessions_size(), capture->sessions_size());
  EXPECT_EQ(live->events_size(), capture->events_size());
}

TEST_P(EveryBuild, ApplyThenCollectShowsTheNewValue) {
  testing::FakePowerShellRunner runner(Fixture(GetParam()));
  v1::SettingChange c;
  c.set_setting("server.requireSigning");
  c.set_value("true");
  ApplyResult r = WindowsApplier({}, &runner).Apply({c});
  EXPECT_EQ(r.ack(), v1::AckChangeRequest::RESULT_APPLIED) << r.message();
  auto after = NewWindowsLiveSource({}, &runner)->Collect();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->server().require_signing());
}

INSTANTIATE_TEST_SUITE_P(Windows, EveryBuild,
                         ::testing::Values("ws2016", "ws2019", "ws2022", "ws2025"));

}  // namespace
}  // namespace smbfleet::agent::windows
