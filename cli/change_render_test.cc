#include "cli/change_render.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

namespace v1 = smbfleet::v1;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

google::protobuf::Timestamp At(absl::Time t) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(t));
  return ts;
}

v1::AffectedClient Kiosk() {
  v1::AffectedClient a;
  a.set_setting("share.encryptData");
  a.set_share("finance");
  a.set_client_name("KIOSK");
  a.set_client_address("10.0.0.9");
  a.set_user("alice");
  a.set_dialect(v1::DIALECT_SMB_2_1);
  a.set_reason("dialect SMB_2_1 cannot encrypt");
  a.set_evidence("session 7 dialect 2.1");
  *a.mutable_first_seen() = At(kNow - absl::Minutes(50));
  *a.mutable_last_seen() = At(kNow - absl::Minutes(5));
  return a;
}

// A change as GetChange returns it: two hosts, one client in the impact, one approval of two.
v1::Change FinanceChange() {
  v1::Change c;
  c.set_id("c-42");
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.set_version(1);
  c.set_source(v1::CHANGE_SOURCE_HOSTS);
  c.set_reason("encrypt finance");
  c.set_proposed_by("pat");
  *c.mutable_proposed_at() = At(kNow - absl::Hours(3));
  c.set_content_hash("ab12");
  c.set_approvals_required(2);
  auto* a = c.add_approvals();
  a->set_approver("ann");
  *a->mutable_at() = At(kNow - absl::Hours(2));
  a->set_comment("looks right");
  c.mutable_rollout()->add_canary_hosts("fs01");
  c.mutable_rollout()->set_waves("50%,100%");
  c.mutable_rollout()->set_watch("10m");
  c.mutable_rollout()->add_windows("site=ams:Sat 22:00-06:00 UTC+01:00");
  c.set_current_wave(0);
  c.set_wave_count(3);
  c.mutable_impact()->set_hosts(2);
  c.mutable_impact()->set_hosts_with_impact(1);
  c.mutable_impact()->set_refused_clients(1);
  *c.mutable_impact()->add_clients() = Kiosk();
  auto* h = c.add_hosts();
  h->set_host("fs01");
  h->set_state(v1::HOST_CHANGE_STATE_APPLIED);
  h->set_wave(0);
  h->set_message("applied and reloaded");
  *h->mutable_dispatched_at() = At(kNow - absl::Minutes(5));
  *h->mutable_finished_at() = At(kNow - absl::Minutes(4));
  auto* step = h->add_steps();
  step->set_setting("share.encryptData");
  step->set_share("finance");
  step->set_expected_current("false");
  step->set_value("true");
  auto* after = h->add_after();
  after->set_setting("share.encryptData");
  after->set_share("finance");
  after->set_value("true");
  *h->mutable_impact()->add_clients() = Kiosk();
  h->mutable_impact()->set_refused_clients(1);
  h->mutable_impact()->set_refused_sessions(1);
  h->mutable_impact()->mutable_cost()->set_summary("about 12% less throughput");
  auto* h2 = c.add_hosts();
  h2->set_host("fs02");
  h2->set_state(v1::HOST_CHANGE_STATE_PENDING);
  h2->set_wave(1);
  return c;
}

TEST(ChangeRenderTest, ProposeStartsWithTheIdAlone) {
  v1::ProposeChangeResponse r;
  *r.mutable_change() = FinanceChange();
  r.add_skipped("fs03: compliant");
  std::ostringstream out;
  RenderProposed(r, out);
  std::string first = out.str().substr(0, out.str().find('\n'));
  EXPECT_EQ(first, "c-42");
  EXPECT_THAT(out.str(), HasSubstr("2 host(s), 1 client(s) would be refused; needs 2"));
  EXPECT_THAT(out.str(), HasSubstr("skipped: fs03: compliant"));
}

TEST(ChangeRenderTest, ShowPutsFleetImpactFirstThenApprovalsRolloutAndHosts) {
  std::ostringstream out;
  RenderChange(FinanceChange(), out);
  const std::string s = out.str();
  EXPECT_THAT(s, StartsWith("Change c-42  ROLLING_OUT  version 1\n"));
  size_t impact = s.find("Impact:      1 client(s) would be refused, on 1 of 2 host(s)");
  size_t approvals = s.find("Approvals:   1 of 2 required");
  size_t rollout = s.find("Rollout:     wave 1 of 3; canary fs01; waves 50%,100%; watch 10m");
  size_t hosts = s.find("Hosts (2)");
  ASSERT_NE(impact, std::string::npos) << s;
  ASSERT_NE(approvals, std::string::npos) << s;
  ASSERT_NE(rollout, std::string::npos) << s;
  ASSERT_NE(hosts, std::string::npos) << s;
  EXPECT_LT(impact, approvals);
  EXPECT_LT(approvals, rollout);
  EXPECT_LT(rollout, hosts);
  EXPECT_THAT(s, HasSubstr("KIOSK 10.0.0.9 alice SMB 2.1"));
  EXPECT_THAT(s, HasSubstr("share.encryptData [finance]: dialect SMB_2_1 cannot encrypt "
                           "(session 7 dialect 2.1)"));
  EXPECT_THAT(s, HasSubstr("ann at 2027-01-15 06:00:00Z: looks right"));
  EXPECT_THAT(s, HasSubstr("first seen 2027-01-15 07:10:00Z, last seen 2027-01-15 07:55:00Z"));
  EXPECT_THAT(s, HasSubstr("window site=ams:Sat 22:00-06:00 UTC+01:00"));
  EXPECT_THAT(s, HasSubstr("fs01  APPLIED  wave 1"));
  EXPECT_THAT(s, HasSubstr("share.encryptData [finance]: false -> true  (host reports true)"));
  EXPECT_THAT(s, HasSubstr("message: applied and reloaded"));
  EXPECT_THAT(s, HasSubstr("dispatched 2027-01-15 07:55:00Z  finished 2027-01-15 07:56:00Z"));
  EXPECT_THAT(s, HasSubstr("cost: about 12% less throughput"));
  EXPECT_THAT(s, HasSubstr("fs02  PENDING  wave 2"));
  for (const auto& line : absl::StrSplit(s, '\n')) {
    EXPECT_LE(absl::string_view(line).size(), 100u) << line;
  }
}

v1::CounterWindow Window(absl::Time start, absl::Duration length, double cpu, double bytes,
                         uint64_t memory) {
  v1::CounterWindow w;
  *w.mutable_start() = At(start);
  *w.mutable_end() = At(start + length);
  w.mutable_summary()->set_samples(10);
  w.mutable_summary()->set_cpu_percent(cpu);
  w.mutable_summary()->set_smb_bytes_per_second(bytes);
  w.mutable_summary()->set_available_memory_bytes(memory);
  return w;
}

TEST(ChangeRenderTest, ShowPutsMeasuredBesideThePredictedCost) {
  v1::Change c = FinanceChange();
  v1::ChangeHost* fs01 = c.mutable_hosts(0);
  *fs01->mutable_counters_before() =
      Window(kNow - absl::Minutes(15), absl::Minutes(10), 11, 50e6, 3ULL << 30);
  *fs01->mutable_counters_after() = Window(kNow, absl::Minutes(10), 14.04, 40e6, 3ULL << 29);
  fs01->mutable_counters_after()->mutable_summary()->clear_available_memory_bytes();
  fs01->mutable_measured()->set_summary(
      "CPU +3.0 points (predicted +2.5); CPU per byte x1.40 (predicted x1.30); SMB traffic x0.80 "
      "(predicted x0.98)");
  // fs02 applied too, and its after-window still runs: as long as its before-window, from the
  // apply.
  v1::ChangeHost* fs02 = c.mutable_hosts(1);
  fs02->set_state(v1::HOST_CHANGE_STATE_APPLIED);
  *fs02->mutable_finished_at() = At(kNow);
  *fs02->mutable_counters_before() =
      Window(kNow - absl::Minutes(10), absl::Minutes(10), 7.5, 2e6, 1ULL << 30);

  std::ostringstream out;
  RenderChange(c, out);
  const std::string s = out.str();
  const size_t cost = s.find("  cost: about 12% less throughput\n");
  const size_t measured = s.find(
      "  measured: CPU 11.0% -> 14.0%; SMB 50.0 -> 40.0 MB/s; available memory 3.00 -> - GiB\n"
      "    CPU +3.0 points (predicted +2.5)\n"
      "    CPU per byte x1.40 (predicted x1.30)\n"
      "    SMB traffic x0.80 (predicted x0.98)\n");
  ASSERT_NE(cost, std::string::npos) << s;
  ASSERT_NE(measured, std::string::npos) << s;
  EXPECT_LT(cost, measured);
  EXPECT_THAT(s, HasSubstr("  measured: collecting until 08:10 UTC; before: CPU 7.5%; SMB 2.0 "
                           "MB/s; available memory 1.00 GiB\n"));
  EXPECT_LT(measured, s.find("fs02  APPLIED"));
  for (const auto& line : absl::StrSplit(s, '\n')) {
    EXPECT_LE(absl::string_view(line).size(), 100u) << line;
  }

  // Nothing measured yet: no line.
  std::ostringstream plain;
  RenderChange(FinanceChange(), plain);
  EXPECT_THAT(plain.str(), Not(HasSubstr("measured:")));
}

TEST(ChangeRenderTest, ShowSaysWhichCalibrationCorrectedTheCost) {
  v1::Change c = FinanceChange();
  auto* cost = c.mutable_hosts(0)->mutable_impact()->mutable_cost();
  cost->set_calibration_id(3);
  cost->set_calibration_factor(1.12);
  std::ostringstream out;
  RenderChange(c, out);
  EXPECT_THAT(out.str(),
              HasSubstr("  cost: about 12% less throughput; calibrated x1.12 (calibration 3)\n"));
  std::ostringstream plain;
  RenderChange(FinanceChange(), plain);
  EXPECT_THAT(plain.str(), Not(HasSubstr("calibrated")));
}

TEST(ChangeRenderTest, CalibrationSaysTruncatedAndWhatNobodyHad) {
  v1::CostModelCalibration c;
  *c.mutable_since() = At(kNow);
  c.set_input_count(10000);
  c.set_truncated(true);
  auto* g = c.add_groups();
  g->set_platform("unknown");
  g->set_changes(2);
  g->set_measured_cpu_per_byte_ratio(1.5);
  g->set_suggestion("not enough changes (0 of 3)");
  std::ostringstream out;
  RenderCalibration(c, out);
  const std::string s = out.str();
  EXPECT_THAT(s, HasSubstr("10000 (truncated: the newest only)\n"));
  // No protection known on either side, no prediction: "?" and "-".
  EXPECT_THAT(s, HasSubstr("\nunknown   ? -> ?      2  -             -             -      -  "));
  EXPECT_THAT(s, HasSubstr("  x1.50          not enough changes (0 of 3)"));

  std::ostringstream none;
  RenderCalibration(v1::CostModelCalibration(), none);
  EXPECT_THAT(none.str(), HasSubstr("(no change with a measured impact)"));
  std::ostringstream history;
  RenderCalibrationHistory({}, history);
  EXPECT_THAT(history.str(), HasSubstr("(no saved calibration)"));
}

TEST(ChangeRenderTest, ShowSaysHaltAndRollback) {
  v1::Change c = FinanceChange();
  c.set_state(v1::CHANGE_STATE_HALTED);
  c.set_halt_reason("fs01 acked FAILED");
  c.set_rolled_back_by("c-43");
  std::ostringstream out;
  RenderChange(c, out);
  EXPECT_THAT(out.str(), HasSubstr("Halted:      fs01 acked FAILED"));
  EXPECT_THAT(out.str(), HasSubstr("Rolled back: by change c-43"));
}

TEST(ChangeRenderTest, HostileStringsAreEscapedEverywhere) {
  v1::Change c = FinanceChange();
  c.set_reason("evil\x1b[2J");
  c.mutable_hosts(0)->mutable_steps(0)->set_share("fin\x1b]0;pwned\x07");
  c.mutable_hosts(0)->set_message("bidi \xe2\x80\xae txt");
  c.mutable_impact()->mutable_clients(0)->set_client_name(
      "K\xc2\x9b"
      "2J");
  std::ostringstream show;
  RenderChange(c, show);
  EXPECT_THAT(show.str(), Not(HasSubstr("\x1b")));
  EXPECT_THAT(show.str(), Not(HasSubstr("\x07")));
  EXPECT_THAT(show.str(), Not(HasSubstr("\xc2\x9b")));
  EXPECT_THAT(show.str(), Not(HasSubstr("\xe2\x80\xae")));
  EXPECT_THAT(show.str(), HasSubstr("evil\\x1b[2J"));
  EXPECT_THAT(show.str(), HasSubstr("fin\\x1b]0;pwned\\x07"));
  EXPECT_THAT(show.str(), HasSubstr("bidi \\u202e txt"));
  EXPECT_THAT(show.str(), HasSubstr("K\\xc2\\x9b2J"));

  v1::ListChangesResponse list;
  *list.add_changes() = c;
  std::ostringstream listed;
  RenderChangeList(list, kNow, listed);
  EXPECT_THAT(listed.str(), Not(HasSubstr("\x1b")));

  v1::ListAuditResponse audit;
  audit.add_entries()->set_reason("r\x1b[31m");
  std::ostringstream audited;
  RenderAudit(audit, audited);
  EXPECT_THAT(audited.str(), Not(HasSubstr("\x1b")));
  EXPECT_THAT(audited.str(), HasSubstr("r\\x1b[31m"));
}

TEST(ChangeRenderTest, ListIsOneLinePerChange) {
  v1::ListChangesResponse r;
  v1::Change c = FinanceChange();
  c.clear_hosts();  // ListChanges leaves hosts out: the count comes from the impact summary
  *r.add_changes() = c;
  v1::Change old = FinanceChange();
  old.set_id("c-7");
  old.set_state(v1::CHANGE_STATE_COMPLETED);
  old.set_reason("");
  *old.mutable_proposed_at() = At(kNow - absl::Hours(24 * 9));
  *r.add_changes() = old;
  std::ostringstream out;
  RenderChangeList(r, kNow, out);
  EXPECT_THAT(out.str(), ContainsRegex("ID +STATE +HOSTS +APPROVALS +PROPOSER +AGE +REASON"));
  EXPECT_THAT(out.str(), ContainsRegex("c-42 +ROLLING_OUT +2 +1/2 +pat +3h +encrypt finance"));
  EXPECT_THAT(out.str(), ContainsRegex("c-7 +COMPLETED +2 +1/2 +pat +9d +-"));
  std::ostringstream empty;
  RenderChangeList(v1::ListChangesResponse(), kNow, empty);
  EXPECT_THAT(empty.str(), HasSubstr("(no changes)"));
}

TEST(ChangeRenderTest, AuditIsOneLinePerEntry) {
  v1::ListAuditResponse r;
  auto* e = r.add_entries();
  e->set_seq(17);
  *e->mutable_at() = At(kNow);
  e->set_actor("ann");
  e->set_action("approved");
  e->set_change_id("c-42");
  e->set_detail("approval 1 of 2");
  auto* w = r.add_entries();
  w->set_seq(18);
  w->set_actor("fs01");
  w->set_action("waiver_requested");
  w->set_waiver_id("w-3");
  w->set_host("fs01");
  w->set_reason("legacy scanner");
  std::ostringstream out;
  RenderAudit(r, out);
  EXPECT_THAT(
      out.str(),
      ContainsRegex("17 +2027-01-15 08:00:00Z +ann +approved +c-42 +- +- +approval 1 of 2"));
  EXPECT_THAT(out.str(), ContainsRegex("18 +- +fs01 +waiver_requested +waiver w-3 +fs01 +legacy "
                                       "scanner +-"));
}

TEST(ChangeRenderTest, WaiversShowScopeAndState) {
  v1::ListWaiversResponse r;
  auto* w = r.add_waivers();
  w->set_id("w-3");
  w->set_state(v1::WAIVER_STATE_REQUESTED);
  w->set_rule_id("share-encryption");
  w->set_host("fs01");
  w->set_share("finance");
  w->set_created_by("pat");
  w->set_justification("legacy scanner");
  *w->mutable_expires_at() = At(kNow + absl::Hours(24));
  std::ostringstream out;
  RenderWaivers(r, out);
  EXPECT_THAT(out.str(), ContainsRegex("w-3 +REQUESTED +share-encryption +share finance on fs01 +"
                                       "2027-01-16 08:00:00Z +pat +- +- +legacy scanner"));
  std::ostringstream one;
  RenderWaiver("requested", *w, one);
  EXPECT_THAT(one.str(), StartsWith("w-3\n"));
}

TEST(ChangeRenderTest, WatchPrintsOnlyWhatChanged) {
  WatchPrinter p;
  v1::Change c = FinanceChange();
  c.mutable_hosts(0)->set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
  c.mutable_hosts(0)->clear_message();
  EXPECT_THAT(
      p.Update(c, kNow),
      ElementsAre("2027-01-15 08:00:00Z  change  ROLLING_OUT  wave 1 of 3",
                  "2027-01-15 08:00:00Z  fs01  DISPATCHED", "2027-01-15 08:00:00Z  fs02  PENDING"));
  EXPECT_THAT(p.Update(c, kNow + absl::Seconds(1)), IsEmpty());
  c.mutable_hosts(0)->set_state(v1::HOST_CHANGE_STATE_APPLIED);
  c.mutable_hosts(0)->set_message("ok");
  EXPECT_THAT(p.Update(c, kNow + absl::Seconds(2)),
              ElementsAre("2027-01-15 08:00:02Z  fs01  APPLIED  ok"));
  c.set_state(v1::CHANGE_STATE_HALTED);
  c.set_halt_reason("new refusals on fs01");
  EXPECT_THAT(
      p.Update(c, kNow + absl::Seconds(3)),
      ElementsAre("2027-01-15 08:00:03Z  change  HALTED  wave 1 of 3  new refusals on fs01"));
}

TEST(ChangeRenderTest, WatchEndsOnlyWhenTheChangeEnds) {
  v1::Change c = FinanceChange();
  EXPECT_EQ(WatchOutcomeOf(c), WatchOutcome::kContinue);
  c.set_state(v1::CHANGE_STATE_HALTED);
  EXPECT_EQ(WatchOutcomeOf(c), WatchOutcome::kContinue);  // a person may resume it
  c.set_state(v1::CHANGE_STATE_COMPLETED);
  EXPECT_EQ(WatchOutcomeOf(c), WatchOutcome::kFailed);  // fs02 never applied
  c.mutable_hosts(1)->set_state(v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(WatchOutcomeOf(c), WatchOutcome::kSucceeded);
  for (auto s :
       {v1::CHANGE_STATE_REJECTED, v1::CHANGE_STATE_ROLLED_BACK, v1::CHANGE_STATE_EXPIRED}) {
    c.set_state(s);
    EXPECT_EQ(WatchOutcomeOf(c), WatchOutcome::kFailed) << s;
  }
}

TEST(ChangeRenderTest, WatchExitCodeComesFromTheFinalState) {
  v1::Change c = FinanceChange();
  for (auto s : {v1::CHANGE_STATE_PROPOSED, v1::CHANGE_STATE_APPROVED, v1::CHANGE_STATE_ROLLING_OUT,
                 v1::CHANGE_STATE_HALTED}) {
    c.set_state(s);
    EXPECT_EQ(ExitCodeForChange(c), std::nullopt) << s;
  }
  c.set_state(v1::CHANGE_STATE_COMPLETED);
  EXPECT_EQ(ExitCodeForChange(c), kExitFailed);  // fs02 never applied
  for (auto& h : *c.mutable_hosts()) h.set_state(v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(ExitCodeForChange(c), kExitOk);
  for (auto s :
       {v1::CHANGE_STATE_REJECTED, v1::CHANGE_STATE_ROLLED_BACK, v1::CHANGE_STATE_EXPIRED}) {
    c.set_state(s);
    EXPECT_EQ(ExitCodeForChange(c), kExitFailed) << s;
  }
  c.clear_hosts();
  c.set_state(v1::CHANGE_STATE_COMPLETED);
  EXPECT_EQ(ExitCodeForChange(c), kExitFailed);  // nothing applied anywhere
}

// A change of `n` hosts in the given states, in order.
v1::Change ChangeOfHosts(const std::vector<std::pair<v1::HostChangeState, int>>& states) {
  v1::Change c;
  c.set_id("CHG-7");
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.set_wave_count(2);
  int i = 0;
  for (const auto& [state, n] : states) {
    for (int k = 0; k < n; ++k) {
      auto* h = c.add_hosts();
      h->set_host(absl::StrCat("fs", i++));
      h->set_state(state);
    }
  }
  return c;
}

TEST(ChangeRenderTest, ProgressBarCountsHostsByStateAndFitsTheWidth) {
  v1::Change c = ChangeOfHosts({{v1::HOST_CHANGE_STATE_APPLIED, 5},
                                {v1::HOST_CHANGE_STATE_FAILED, 1},
                                {v1::HOST_CHANGE_STATE_TIMED_OUT, 1},
                                {v1::HOST_CHANGE_STATE_REFUSED, 1},
                                {v1::HOST_CHANGE_STATE_PRECONDITION_FAILED, 1},
                                {v1::HOST_CHANGE_STATE_DISPATCHED, 3},
                                {v1::HOST_CHANGE_STATE_PENDING, 8}});
  HostTally t = TallyHosts(c);
  EXPECT_EQ(t.applied, 5);
  EXPECT_EQ(t.failed, 2);
  EXPECT_EQ(t.refused, 2);
  EXPECT_EQ(t.pending, 11);
  // 20 hosts on a 40-column bar: two columns each.
  std::string line = ProgressLine(c, 200);
  EXPECT_EQ(line, "CHG-7  ROLLING_OUT  wave 1/2  [" + std::string(10, '#') + std::string(4, 'x') +
                      std::string(4, '!') + std::string(22, '.') +
                      "]  5 applied  2 failed  2 refused  11 pending");
  for (size_t width : {60u, 80u, 100u}) {
    EXPECT_LE(DisplayWidth(ProgressLine(c, width)), width) << width;
  }
  // Nothing on it is a control character, whatever the id says.
  c.set_id("CHG\x1b[2J");
  EXPECT_THAT(ProgressLine(c, 120), Not(HasSubstr("\x1b")));
  EXPECT_THAT(ProgressLine(c, 120), HasSubstr("CHG\\x1b[2J"));
  // Every host applied: a full bar of #.
  v1::Change done = ChangeOfHosts({{v1::HOST_CHANGE_STATE_APPLIED, 3}});
  done.set_state(v1::CHANGE_STATE_COMPLETED);
  EXPECT_THAT(ProgressLine(done, 200), HasSubstr("[" + std::string(40, '#') + "]"));
}

TEST(ChangeRenderTest, AgeText) {
  EXPECT_EQ(AgeText(absl::Seconds(42)), "42s");
  EXPECT_EQ(AgeText(absl::Minutes(5)), "5m");
  EXPECT_EQ(AgeText(absl::Hours(47)), "47h");
  EXPECT_EQ(AgeText(absl::Hours(24 * 3)), "3d");
  EXPECT_EQ(AgeText(-absl::Seconds(3)), "0s");  // clock skew
}

}  // namespace
}  // namespace smbfleet::cli
