#include "agent/platform/windows/event_xml.h"

#include <string>

#include "agent/platform/windows/events.h"
#include "agent/platform/windows/shim/cmdline.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// EvtRenderEventXml output for an SMBServer 1003 event (Windows renders single quotes).
constexpr char k1003[] =
    "<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System>"
    "<Provider Name='Microsoft-Windows-SMBServer' Guid='{d48ce617-33a2-4bc3-a5c7-11aa4f29619e}'/>"
    "<EventID>1003</EventID><Version>1</Version><Level>2</Level><Task>1003</Task><Opcode>0</Opcode>"
    "<Keywords>0x4000000000000002</Keywords><TimeCreated "
    "SystemTime='2025-12-02T07:30:00.1234567Z'/>"
    "<EventRecordID>412</EventRecordID><Correlation/><Execution ProcessID='4' ThreadID='712'/>"
    "<Channel>Microsoft-Windows-SMBServer/Operational</Channel><Computer>FS2019.corp.contoso.com</"
    "Computer>"
    "<Security UserID='S-1-5-18'/></System><EventData>"
    "<Data Name='ShareNameLength'>11</Data><Data Name='ShareName'>R&amp;D &lt;x&gt;</Data>"
    "<Data Name='ClientNameLength'>10</Data><Data Name='ClientName'>\\\\10.1.9.7</Data>"
    "<Data Name='UserName'>CORP\\scanner</Data><Data Name='ClientAddressLength'>16</Data>"
    "<Data Name='ClientAddress'>0200C29E0A0109070000000000000000</Data>"
    "<Data Name='SessionID'>0x14000000015</Data><Data Name='Empty'/></EventData></Event>";

TEST(EventXmlTest, RendersLikeThePowerShellProbe) {
  auto o = EventXmlToObject(k1003, "The server received an unencrypted message.");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)["Id"], 1003);
  EXPECT_EQ((*o)["RecordId"], 412);
  EXPECT_EQ((*o)["Level"], 2);
  EXPECT_EQ((*o)["LogName"], "Microsoft-Windows-SMBServer/Operational");
  EXPECT_EQ((*o)["ProviderName"], "Microsoft-Windows-SMBServer");
  EXPECT_EQ((*o)["TimeCreated"], "/Date(1764660600123)/");
  EXPECT_EQ((*o)["EventData"]["ShareName"], "R&D <x>");
  EXPECT_EQ((*o)["EventData"]["Empty"], "");
}

TEST(EventXmlTest, DocumentFeedsParseEvents) {
  shim::ChannelRead op;
  op.latest_record_id = 412;
  op.events.push_back({k1003, "msg"});
  shim::ChannelRead missing;
  missing.channel_exists = false;
  shim::ChannelRead denied;
  denied.error = "Microsoft-Windows-SMBServer/Security: EvtQuery: Access is denied. (5)";
  shim::ChannelRead broken;
  broken.latest_record_id = 3;
  broken.events.push_back({"<Event><System><EventID>x</EventID></System></Event>", ""});
  std::string doc = EventsDocument({{"Microsoft-Windows-SMBServer/Operational", op},
                                    {"Microsoft-Windows-SMBClient/Audit", missing},
                                    {"Microsoft-Windows-SMBServer/Security", denied},
                                    {"Microsoft-Windows-SMBServer/Audit", broken}});
  std::vector<std::string> problems;
  std::map<std::string, uint64_t> latest;
  auto events = ParseEvents(doc, "events", &problems, &latest);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(1));
  EXPECT_EQ((*events)[0].kind(), "unencrypted_rejected");
  EXPECT_EQ((*events)[0].client_address(), "10.1.9.7");
  EXPECT_EQ((*events)[0].share_name(), "R&D <x>");
  EXPECT_EQ(latest.at("Microsoft-Windows-SMBServer/Operational"), 412u);
  EXPECT_EQ(latest.count("Microsoft-Windows-SMBClient/Audit"), 0u);
  ASSERT_THAT(problems, SizeIs(2));
  EXPECT_THAT(problems[0], HasSubstr("Access is denied"));
  EXPECT_THAT(problems[1], HasSubstr("<EventID>"));
}

TEST(EventXmlTest, MalformedXmlIsAnErrorNotACrash) {
  for (const char* xml : {"", "<Event>", "<Event><System>", "<System><EventID></EventID></System>",
                          "<System><EventID>1</EventID><Level>2</System>"}) {
    auto o = EventXmlToObject(xml, "");
    (void)o;  // any outcome but a crash; the last one parses the id
  }
  EXPECT_FALSE(EventXmlToObject("<Event>", "").ok());
  EXPECT_TRUE(EventXmlToObject("<System><EventID>1</EventID></System>", "").ok());
}

TEST(CommandLineTest, QuotingRoundTripsEveryArgument) {
  using shim::BuildCommandLine;
  using shim::QuoteArgument;
  using shim::SplitCommandLine;
  std::vector<std::vector<std::string>> cases = {
      {"powershell.exe", "-NoProfile", "-EncodedCommand", "SQBFAFgA"},
      {"C:\\Program Files\\smbfleet\\smbfleet-agent.exe", "run", "--config", "C:\\cfg dir\\a.yaml"},
      {"x", "", "a b", "a\"b", "a\\\"b", "trail\\", "trail space\\", "\\\\server\\share"},
      {"x", "Reports'; Remove-Item C:\\ -Recurse; '", "$(calc)", "a`\"b",
       "\xE2\x80\x98x\xE2\x80\x99"},
  };
  for (const auto& argv : cases) {
    EXPECT_EQ(SplitCommandLine(BuildCommandLine(argv)), argv) << BuildCommandLine(argv);
  }
  EXPECT_EQ(QuoteArgument("plain"), "plain");
  EXPECT_EQ(QuoteArgument(""), "\"\"");
  EXPECT_EQ(QuoteArgument("a b\\"), "\"a b\\\\\"");
  EXPECT_EQ(QuoteArgument("a\"b"), "\"a\\\"b\"");
}

}  // namespace
}  // namespace smbfleet::agent::windows
