#include "cli/render.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RenderTest, HostShowsSessionsPerShareWithDialect) {
  smbfleet::v1::GetHostResponse h;
  h.mutable_summary()->set_name("fs01");
  auto* s = h.mutable_posture()->add_sessions();
  s->set_session_id("7");
  s->set_user("alice");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  s->set_cipher(smbfleet::v1::AES_256_GCM);
  auto* sc = s->add_shares();
  sc->set_name("finance");
  sc->set_signing(smbfleet::v1::PROTECTION_FULL);
  sc->set_encryption(smbfleet::v1::PROTECTION_NONE);
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(), HasSubstr("SMB 2.1"));
  EXPECT_THAT(out.str(), HasSubstr("finance"));
  EXPECT_THAT(out.str(), HasSubstr("AES-256-GCM"));
  EXPECT_THAT(out.str(), HasSubstr("signing required    unknown"));
}

TEST(RenderTest, HostShowsEachSessionsLowestRoundTripTime) {
  smbfleet::v1::GetHostResponse h;
  struct Case {
    const char* id;
    int64_t min_rtt_us;  // -1: not measured
  };
  for (const Case& c : {Case{"11", 12}, Case{"12", 8900}, Case{"13", 23400}, Case{"14", -1}}) {
    auto* s = h.mutable_posture()->add_sessions();
    s->set_session_id(c.id);
    s->set_client_address("10.0.0.9");
    s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    if (c.min_rtt_us >= 0) s->set_min_rtt_us(static_cast<uint32_t>(c.min_rtt_us));
  }
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(), HasSubstr("RTT (MIN)"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("  11 +10.0.0.9 [^\n]* 0.012 ms\n"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("  12 +10.0.0.9 [^\n]* 8.90 ms\n"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("  13 +10.0.0.9 [^\n]* 23.4 ms\n"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("  14 +10.0.0.9 [^\n]* -\n"));
}

TEST(RenderTest, HostShowsNicsWithUnknownsSaidAsSuch) {
  smbfleet::v1::GetHostResponse h;
  auto* fast = h.mutable_posture()->add_nics();
  fast->set_name("Ethernet 2");
  fast->set_up(true);
  fast->set_link_speed_bps(25'000'000'000);
  fast->set_rss_queues(8);
  fast->set_rss_enabled(true);
  fast->set_rss_capable(true);
  fast->set_rdma_capable(false);
  auto* idle = h.mutable_posture()->add_nics();
  idle->set_name("eth1");
  idle->set_link_speed_bps(2'500'000'000);
  std::ostringstream out;
  RenderHost(h, out);
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n');
  auto line_of = [&](const std::string& name) {
    for (const auto& l : lines) {
      if (l.find("  " + name + " ") == 0) return l;
    }
    return std::string();
  };
  EXPECT_THAT(out.str(), HasSubstr("NICs (2)"));
  EXPECT_THAT(line_of("Ethernet 2"), HasSubstr("25 Gbit/s"));
  EXPECT_THAT(line_of("Ethernet 2"), HasSubstr("8 (on)"));
  EXPECT_THAT(line_of("eth1"), HasSubstr("2.5 Gbit/s"));
  EXPECT_THAT(line_of("eth1"), Not(HasSubstr("yes")));
  EXPECT_THAT(line_of("eth1"), HasSubstr("unknown"));
  // No NICs reported: no section.
  smbfleet::v1::GetHostResponse none;
  std::ostringstream none_out;
  RenderHost(none, none_out);
  EXPECT_THAT(none_out.str(), Not(HasSubstr("NICs")));
}

TEST(RenderTest, HostShowsEachSharesClassification) {
  smbfleet::v1::GetHostResponse h;
  auto* hr = h.mutable_posture()->add_shares();
  hr->set_name("HR");
  hr->set_path("/srv/hr");
  hr->set_classification("pii");
  auto* pub = h.mutable_posture()->add_shares();
  pub->set_name("public");
  pub->set_path("/srv/public");
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("HR +/srv/hr +unknown +pii"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("public +/srv/public +unknown +-"));
}

TEST(RenderTest, ControlCharactersAreEscaped) {
  smbfleet::v1::ListHostsResponse hosts;
  hosts.add_hosts()->set_name("evil\x1b[2Jname");
  std::ostringstream out;
  RenderHostTable(hosts, out);
  EXPECT_THAT(out.str(), HasSubstr("evil\\x1b[2Jname"));
  EXPECT_THAT(out.str(), Not(HasSubstr("\x1b")));
}

TEST(RenderTest, HostsShowDesiredVsAppliedChangeOnlyWhenAnyHostHasOne) {
  smbfleet::v1::ListHostsResponse hosts;
  hosts.add_hosts()->set_name("fs01");
  std::ostringstream before;
  RenderHostTable(hosts, before);
  EXPECT_THAT(before.str(), Not(HasSubstr("CHANGE")));

  auto* at = hosts.mutable_hosts(0)->mutable_change_status();
  at->set_desired_change_id("c-1");
  at->set_desired_version(2);
  at->set_applied_change_id("c-1");
  at->set_applied_version(2);
  at->set_last_result(smbfleet::v1::HOST_CHANGE_STATE_APPLIED);
  auto* behind = hosts.add_hosts();
  behind->set_name("fs02");
  behind->mutable_change_status()->set_desired_change_id("c-1");
  behind->mutable_change_status()->set_desired_version(2);
  behind->mutable_change_status()->set_last_result(
      smbfleet::v1::HOST_CHANGE_STATE_PRECONDITION_FAILED);
  hosts.add_hosts()->set_name("fs03");
  std::ostringstream out;
  RenderHostTable(hosts, out);
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("LAST SEEN +CHANGE"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("fs01 .* c-1 v2 applied"));
  EXPECT_THAT(out.str(),
              ::testing::ContainsRegex("fs02 .* c-1 v2 wanted \\(last PRECONDITION_FAILED\\)"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("fs03 .* -\n"));
}

TEST(RenderTest, HostShowsItsChangeStatusAndLastError) {
  smbfleet::v1::GetHostResponse h;
  auto* c = h.mutable_summary()->mutable_change_status();
  c->set_desired_change_id("c-1");
  c->set_desired_version(1);
  c->set_last_result(smbfleet::v1::HOST_CHANGE_STATE_REFUSED);
  c->set_last_error("enforcement is off");
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(),
              HasSubstr("Change:      c-1 v1 wanted (last REFUSED): enforcement is off"));
}

TEST(RenderTest, FindingsNameTheWaiverThatHidesThem) {
  smbfleet::v1::ListFindingsResponse f;
  auto* open = f.add_findings();
  open->set_host("fs01");
  open->set_rule_id("share-encryption");
  open->set_message("not encrypted");
  std::ostringstream plain;
  RenderFindings(f, plain);
  EXPECT_THAT(plain.str(), Not(HasSubstr("WAIVED BY")));
  auto* waived = f.add_findings();
  waived->set_host("fs02");
  waived->set_rule_id("share-encryption");
  waived->set_message("not encrypted");
  waived->set_waiver_id("w-3");
  std::ostringstream out;
  RenderFindings(f, out);
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("WAIVED BY +WHY"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("fs02 .* w-3 +not encrypted"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("fs01 .* - +not encrypted"));
}

TEST(RenderTest, ReadinessListsClientsOrServersWithFirstAndLastSeen) {
  smbfleet::v1::GetReadinessResponse server_side;
  server_side.set_requirement("rule min-dialect-3-1-1: server.minDialect = SMB_3_1_1");
  server_side.set_hosts_considered(1);
  server_side.set_side("server");
  auto* c = server_side.add_clients();
  c->set_client_address("127.0.0.1");
  c->set_user("probeuser");
  c->add_hosts("fs-ready");
  c->add_reasons("dialect SMB_2_1 below SMB_3_1_1");
  c->mutable_first_seen()->set_seconds(1796000000);
  c->mutable_last_seen()->set_seconds(1796000600);
  std::ostringstream out;
  RenderReadiness(server_side, out);
  EXPECT_THAT(out.str(), HasSubstr("1 failing host(s) considered; server-side settings"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("CLIENT +ADDRESS +USER +FIRST SEEN"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex(
                             "- +127\\.0\\.0\\.1 +probeuser +2026-.* +fs-ready +dialect SMB_2_1"));
  EXPECT_THAT(out.str(), Not(HasSubstr("SERVER")));

  smbfleet::v1::GetReadinessResponse client_side;
  client_side.set_side("client");
  auto* s = client_side.add_servers();
  s->set_server_name("oldnas\x1b[2J");
  s->add_hosts("fs2022b");
  s->add_hosts("ws17");
  s->add_reasons("connection with dialect SMB_2_1 below SMB_3_1_1");
  std::ostringstream servers;
  RenderReadiness(client_side, servers);
  EXPECT_THAT(servers.str(),
              ::testing::ContainsRegex("SERVER +ADDRESS +FIRST SEEN +LAST SEEN +CLIENT HOSTS"));
  EXPECT_THAT(servers.str(), HasSubstr("fs2022b; ws17"));
  EXPECT_THAT(servers.str(), Not(HasSubstr("\x1b"))) << "escaped, not sent to the terminal";
  EXPECT_THAT(servers.str(), Not(HasSubstr("CLIENT  ")));

  std::ostringstream none;
  RenderReadiness(smbfleet::v1::GetReadinessResponse(), none);
  EXPECT_THAT(none.str(), HasSubstr("nothing would be cut off"));
}

TEST(RenderTest, CleanKeepsUtf8AndEscapesWhatCouldDriveTheTerminal) {
  EXPECT_EQ(Clean("Z\xc3\xbcrich \xe2\x82\xac"), "Z\xc3\xbcrich \xe2\x82\xac");  // kept as is
  EXPECT_EQ(Clean("a\tb\x7f"), "a\\x09b\\x7f");
  EXPECT_EQ(Clean("\xc2\x9b"
                  "31m"),
            "\\xc2\\x9b31m");                       // C1 CSI
  EXPECT_EQ(Clean("x\xe2\x81\xa7y"), "x\\u2067y");  // bidi isolate
  EXPECT_EQ(Clean("\xff\xc3"), "\\xff\\xc3");       // not UTF-8, truncated sequence
}

// Every bidirectional control, not only the overrides: marks (U+200E, U+200F, U+061C) and
// embeddings reorder a line as well.
TEST(RenderTest, CleanEscapesEveryBidiControlAndC1) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"a\xe2\x80\x8ez", "a\\u200ez"},
      {"a\xe2\x80\x8fz", "a\\u200fz"},
      {"a\xd8\x9cz", "a\\u061cz"},
      {"a\xe2\x80\xaaz", "a\\u202az"},
      {"a\xe2\x81\xa6z", "a\\u2066z"},
      {"a\xe2\x81\xa9z", "a\\u2069z"},
      {"a\xc2\x80z", "a\\xc2\\x80z"},
      {"a\xc2\x9fz", "a\\xc2\\x9fz"},
      {"a\xe0\x80\x9bz", "a\\xe0\\x80\\x9bz"},  // overlong: not UTF-8
  };
  for (const Case& c : cases) EXPECT_EQ(Clean(c.in), c.out) << c.out;
}

// A share name that would reverse the line it is printed on, and one that would start a CSI
// sequence, are shown escaped wherever the host view prints share names.
TEST(RenderTest, HostViewEscapesHostileShareAndHostNames) {
  smbfleet::v1::GetHostResponse h;
  h.mutable_summary()->set_name("fs01\xe2\x80\x8f");
  auto* share = h.mutable_posture()->add_shares();
  share->set_name("pay\xe2\x80\xaeroll");
  share->set_path(
      "/srv/\xc2\x9b"
      "2J");
  auto* session = h.mutable_posture()->add_sessions();
  session->set_user("eve\xd8\x9c");
  session->add_shares()->set_name("pay\xe2\x80\xaeroll");
  std::ostringstream out;
  RenderHost(h, out);
  for (const char* raw : {"\xe2\x80\x8f", "\xe2\x80\xae", "\xc2\x9b", "\xd8\x9c"}) {
    EXPECT_THAT(out.str(), Not(HasSubstr(raw))) << out.str();
  }
  EXPECT_THAT(out.str(), HasSubstr("pay\\u202eroll"));
  EXPECT_THAT(out.str(), HasSubstr("fs01\\u200f"));
}

// Sets the table width for one test, and back to no limit after.
class TableWidthTest : public ::testing::Test {
 protected:
  void TearDown() override { SetTableWidth(0); }
};

TEST_F(TableWidthTest, LongColumnsAreCutWithAnEllipsisToTheWidthNeverWrapped) {
  smbfleet::v1::ListHostsResponse hosts;
  auto* h = hosts.add_hosts();
  h->set_name("fs01");
  h->set_os_name(std::string(200, 'w'));
  h->set_os_version("10.0");
  auto* evil = hosts.add_hosts();
  evil->set_name("evil\x1b[2J" + std::string(100, 'n'));
  std::ostringstream wide;
  RenderHostTable(hosts, wide);
  SetTableWidth(100);
  std::ostringstream out;
  RenderHostTable(hosts, out);
  std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  // One line per host and the header: nothing wrapped.
  ASSERT_EQ(lines.size(), 3u) << out.str();
  for (const std::string& line : lines) {
    EXPECT_LE(DisplayWidth(line), 100u) << line;
  }
  EXPECT_THAT(out.str(), HasSubstr("\u2026"));
  EXPECT_THAT(out.str(), HasSubstr("fs01  "));     // a short column is left whole
  EXPECT_THAT(out.str(), HasSubstr("evil\\x1b"));  // cut, still escaped
  EXPECT_THAT(out.str(), Not(HasSubstr("\x1b")));
  EXPECT_THAT(wide.str(), HasSubstr(std::string(200, 'w')));  // no limit: nothing cut
  EXPECT_THAT(wide.str(), Not(HasSubstr("\u2026")));
}

TEST(RenderTest, FitCellCutsWholeCodePoints) {
  EXPECT_EQ(FitCell("short", 10), "short");
  EXPECT_EQ(FitCell("abcdefgh", 5), "abcd\u2026");
  EXPECT_EQ(FitCell("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 4), "\u00e9\u00e9\u00e9\u2026");
  EXPECT_EQ(DisplayWidth(FitCell("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", 4)), 4u);
  EXPECT_EQ(FitCell("abc", 0), "");
}

TEST(RenderTest, TableWidthComesFromTheTerminalThenColumnsElseNoLimit) {
  EXPECT_EQ(TableWidthFor(120, "80"), 120u);
  EXPECT_EQ(TableWidthFor(-1, "80"), 80u);
  EXPECT_EQ(TableWidthFor(0, "80"), 80u);
  EXPECT_EQ(TableWidthFor(-1, nullptr), 0u);
  EXPECT_EQ(TableWidthFor(-1, "wide"), 0u);
  EXPECT_EQ(TableWidthFor(-1, "0"), 0u);
}

TEST(RenderTest, ComplianceCsvQuotesPerRfc4180AndDisarmsFormulas) {
  smbfleet::v1::GetComplianceResponse c;
  c.set_policy_name("base,line");
  c.set_policy_version("1");
  auto* r = c.add_rules();
  r->set_rule_id("say \"hi\"\nthen go");
  r->set_compliant(3);
  r->set_non_compliant(1);
  r->set_compliant_pct(75);
  auto* f = c.add_rules();
  f->set_rule_id("=HYPERLINK(\"http://x\")");
  f->set_compliant_pct(-1);
  for (const char* lead : {"+1", "-1", "@SUM(A1)"}) c.add_rules()->set_rule_id(lead);
  c.add_rules()->set_rule_id("esc\x1b[2J");
  std::ostringstream out;
  RenderComplianceCsv(c, out);
  EXPECT_EQ(out.str(),
            "policy,policy_version,rule,compliant_pct,compliant,non_compliant,waived,unknown,"
            "errors,not_applicable\r\n"
            "\"base,line\",1,\"say \"\"hi\"\"\nthen go\",75.0,3,1,0,0,0,0\r\n"
            "\"base,line\",1,\"'=HYPERLINK(\"\"http://x\"\")\",,0,0,0,0,0,0\r\n"
            "\"base,line\",1,'+1,0.0,0,0,0,0,0,0\r\n"
            "\"base,line\",1,'-1,0.0,0,0,0,0,0,0\r\n"
            "\"base,line\",1,'@SUM(A1),0.0,0,0,0,0,0,0\r\n"
            "\"base,line\",1,esc\\x1b[2J,0.0,0,0,0,0,0,0\r\n");
}

}  // namespace
}  // namespace smbfleet::cli
