#include "agent/platform/windows/events.h"

#include <cstdio>
#include <string>
#include <vector>

#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(EventKindTest, MeaningsByChannelAndId) {
  struct Case {
    const char* channel;
    uint32_t id;
    const char* message;
    const char* kind;
  };
  std::vector<Case> cases = {
      {"Microsoft-Windows-SMBServer/Audit", 3000, "SMB1 access", "smb1_access"},
      {"Microsoft-Windows-SMBServer/Operational", 1001, "", "smb1_rejected"},
      {"Microsoft-Windows-SMBServer/Operational", 1003, "", "unencrypted_rejected"},
      {"Microsoft-Windows-SMBServer/Audit", 3021, "does not support SMB signing",
       "client_no_signing"},
      {"Microsoft-Windows-SMBServer/Audit", 3022, "does not support SMB encryption",
       "client_no_encryption"},
      {"Microsoft-Windows-SMBServer/Audit", 3021, "", "client_capability_audit"},
      {"Microsoft-Windows-SMBServer/Security", 3023, "", "guest_logon"},
      {"Microsoft-Windows-SMBClient/Security", 31017, "", "guest_logon_rejected"},
      {"Microsoft-Windows-SMBClient/Security", 31022, "", "guest_logon"},
      // 31018 is a configuration warning and 31019 is about mutual authentication: neither
      // is a rejection.
      {"Microsoft-Windows-SMBClient/Security", 31018, "", "insecure_guest_enabled"},
      {"Microsoft-Windows-SMBClient/Security", 31019, "", ""},
      {"Microsoft-Windows-SMBClient/Audit", 31998, "server does not support signing",
       "server_no_signing"},
      {"Microsoft-Windows-SMBClient/Connectivity", 30803, "", ""},
      // Same id, other provider: no meaning carried over.
      {"Microsoft-Windows-SMBClient/Security", 3000, "", ""},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(EventKind(c.channel, c.id, c.message), c.kind) << c.channel << " " << c.id;
  }
}

TEST(DecodeSockaddrTest, Ipv4Ipv6AndOther) {
  EXPECT_EQ(DecodeSockaddr("0200C29E0A0109070000000000000000"), "10.1.9.7");
  EXPECT_EQ(DecodeSockaddr("1700C3C000000000FE8000000000000001C203FFFE4455660B000000"),
            "fe80::1c2:3ff:fe44:5566");
  EXPECT_EQ(DecodeSockaddr("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(DecodeSockaddr("ZZ"), "ZZ");
}

TEST(ParseEventsTest, NamedEventDataAndMessageFallback) {
  std::vector<std::string> problems;
  auto events = ParseEvents(R"J([
    {"Id": 1003, "LogName": "Microsoft-Windows-SMBServer/Operational", "RecordId": 412,
     "ProviderName": "Microsoft-Windows-SMBServer",
     "TimeCreated": "\/Date(1764660600000)\/", "Level": 2, "Message": "x",
     "EventData": {"ShareName": "Finance", "UserName": "CORP\\scanner",
                   "ClientName": "\\\\10.1.9.7", "ClientAddress": "0200C29E0A0109070000000000000000"}},
    {"Id": 3000, "LogName": "Microsoft-Windows-SMBServer/Audit", "RecordId": 17, "Level": 4,
     "Properties": [{"Value": "10.0.0.31"}],
     "Message": "SMB1 access\r\n\r\nClient Address: 10.0.0.31\r\n\r\nGuidance:\r\n\r\nText."},
    {"Id": 551, "LogName": "Microsoft-Windows-SMBServer/Security", "RecordId": 9, "Level": 2,
     "Message": "SMB Session Authentication Failure\r\n\r\nClient Name: \\\\host\r\nUser Name: CORP\\m\r\nStatus: The attempted logon is invalid. (0xC000006D)",
     "EventData": {"Status": "3221225581"}},
    {"LogName": "no id"}])J",
                            "events.json", &problems);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(3));
  const v1::Event& a = (*events)[0];
  EXPECT_EQ(a.kind(), "unencrypted_rejected");
  EXPECT_EQ(a.share_name(), "Finance");
  EXPECT_EQ(a.user(), "CORP\\scanner");
  EXPECT_EQ(a.client_address(), "10.1.9.7");
  EXPECT_EQ(a.client_name(), "\\\\10.1.9.7");
  EXPECT_EQ(a.level(), v1::EVENT_LEVEL_ERROR);
  EXPECT_EQ(a.time().seconds(), 1764660600);
  EXPECT_EQ(a.data().at("ShareName"), "Finance");
  const v1::Event& b = (*events)[1];
  EXPECT_EQ(b.kind(), "smb1_access");
  EXPECT_EQ(b.client_address(), "10.0.0.31");  // from the rendered message
  EXPECT_EQ(b.level(), v1::EVENT_LEVEL_INFORMATION);
  const v1::Event& c = (*events)[2];
  EXPECT_EQ(c.status(), "0xC000006D");
  EXPECT_EQ(c.user(), "CORP\\m");
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("events.json[3].Id"));
}

TEST(ParseEventsTest, LiveWrapperWithLatestAndErrors) {
  std::vector<std::string> problems;
  std::map<std::string, uint64_t> latest;
  auto events = ParseEvents(
      R"J({"events": {"Id": 3000, "LogName": "Microsoft-Windows-SMBServer/Audit", "RecordId": 5},
          "latest": {"Microsoft-Windows-SMBServer/Audit": 5, "Microsoft-Windows-SMBClient/Audit": 0},
          "errors": [{"channel": "Microsoft-Windows-SMBServer/Security", "message": "Access is denied"}]})J",
      "events", &problems, &latest);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(1));
  EXPECT_EQ(latest.at("Microsoft-Windows-SMBServer/Audit"), 5u);
  EXPECT_EQ(latest.at("Microsoft-Windows-SMBClient/Audit"), 0u);
  ASSERT_THAT(problems, SizeIs(1));
  EXPECT_THAT(problems[0], HasSubstr("Access is denied"));
}

v1::Event Ev(const std::string& channel, uint64_t record, int64_t secs) {
  v1::Event e;
  e.set_channel(channel);
  e.set_record_id(record);
  e.mutable_time()->set_seconds(secs);
  return e;
}

constexpr char kAudit[] = "Microsoft-Windows-SMBServer/Audit";
constexpr char kSec[] = "Microsoft-Windows-SMBServer/Security";

TEST(EventBookmarkTest, EachEventOnceAndBoundWithDroppedCount) {
  EventBookmark b;
  auto first = b.Take({Ev(kAudit, 1, 100), Ev(kAudit, 2, 101), Ev(kSec, 7, 99)}, 10, {});
  EXPECT_THAT(first.events, SizeIs(3));
  EXPECT_EQ(first.dropped, 0u);
  EXPECT_EQ(first.events[0].record_id(), 7u);  // oldest first
  EXPECT_EQ(b.Last(kAudit), 2u);
  EXPECT_EQ(b.Last(kSec), 7u);
  // The same events again (a reader that ignores the bookmark) plus new ones, some twice.
  auto second = b.Take({Ev(kAudit, 1, 100), Ev(kAudit, 2, 101), Ev(kAudit, 3, 102),
                        Ev(kAudit, 3, 102), Ev(kAudit, 4, 103), Ev(kAudit, 5, 104)},
                       2, {});
  ASSERT_THAT(second.events, SizeIs(2));
  EXPECT_EQ(second.events[0].record_id(), 4u);  // the newest are kept
  EXPECT_EQ(second.events[1].record_id(), 5u);
  EXPECT_EQ(second.dropped, 1u);  // record 3: counted, not reported, never reported later
  EXPECT_EQ(b.Last(kAudit), 5u);
  auto third = b.Take({Ev(kAudit, 3, 102)}, 2, {});
  EXPECT_THAT(third.events, IsEmpty());
  EXPECT_EQ(third.dropped, 0u);
}

TEST(EventBookmarkTest, LatestCountsWhatTheReaderDidNotFetch) {
  EventBookmark b;
  b.Take({Ev(kAudit, 10, 1)}, 10, {{kAudit, 10}});
  // 40 new events (11..50); the reader fetched the newest 3.
  auto sel = b.Take({Ev(kAudit, 48, 5), Ev(kAudit, 49, 6), Ev(kAudit, 50, 7)}, 10, {{kAudit, 50}});
  EXPECT_THAT(sel.events, SizeIs(3));
  EXPECT_EQ(sel.dropped, 37u);
  EXPECT_EQ(b.Last(kAudit), 50u);
}

TEST(EventBookmarkTest, ClearedLogStartsOver) {
  EventBookmark b;
  b.Take({Ev(kAudit, 900, 1)}, 10, {{kAudit, 900}});
  auto sel = b.Take({Ev(kAudit, 1, 2), Ev(kAudit, 2, 3)}, 10, {{kAudit, 2}});
  EXPECT_THAT(sel.events, SizeIs(2));
  EXPECT_EQ(sel.dropped, 0u);
  EXPECT_EQ(b.Last(kAudit), 2u);
}

TEST(EventBookmarkTest, SurvivesARestartThroughItsFile) {
  std::string dir = ::testing::TempDir() + "/bookmark_test";
  ASSERT_TRUE(MakeDirs(dir).ok());
  std::string path = dir + "/events-bookmark.json";
  std::remove(path.c_str());
  {
    auto b = EventBookmark::Load(path);
    ASSERT_TRUE(b.ok());
    EXPECT_THAT(b->channels(), IsEmpty());
    b->Take({Ev(kAudit, 18446744073709551610u, 1)}, 10, {});
    ASSERT_TRUE(b->Save(path).ok());
  }
  auto again = EventBookmark::Load(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Last(kAudit), 18446744073709551610u);
  ASSERT_TRUE(WriteFileAtomic(path, "{\"x\": \"seven\"}").ok());
  auto bad = EventBookmark::Load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(path));
  ASSERT_TRUE(WriteFileAtomic(path, "{not json").ok());
  EXPECT_FALSE(EventBookmark::Load(path).ok());
}

}  // namespace
}  // namespace smbfleet::agent::windows
