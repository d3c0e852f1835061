// The agent's loops (scheduler, flush, watch) driven by a fake clock and a fake collector: no
// test here sleeps or waits for real time to pass.

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "agent/core/agent.h"
#include "agent/core/testing/fake_clock.h"
#include "agent/core/testing/fake_collector_client.h"
#include "agent/core/testing/fake_settings_applier.h"
#include "agent/core/testing/test_approvals.h"
#include "common/posture_digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using testing::FakeClock;
using testing::FakeCollectorClient;
using ::testing::IsEmpty;

class FakeSource : public PostureSource {
 public:
  absl::StatusOr<smbfleet::v1::Posture> Collect() override {
    smbfleet::v1::Posture p;
    p.mutable_host()->set_hostname("fs01");
    return p;
  }
  std::string Describe() const override { return "fake"; }
  // Counts commits, as the Windows source saves its event bookmark there.
  absl::Status CommitCollected() override {
    ++commits;
    return absl::OkStatus();
  }
  int commits = 0;
};

class AgentLoopsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/agent_loops_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    config_.spool_dir = dir_;
    config_.interval = seconds(600);
    config_.splay = seconds(60);
    config_.max_backoff = seconds(8);
    config_.benchmark_interval = seconds(0);
    // Nudges come at once after a report here; their limit has a test of its own.
    config_.min_nudge_interval = seconds(0);
    spool_ = std::make_unique<Spool>(dir_, 100);
    ASSERT_TRUE(spool_->Open().ok());
  }
  void TearDown() override {
    spool_.reset();
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(dir_ + "-journal");
    std::filesystem::remove(dir_ + "-approver-set.pb");
  }

  std::unique_ptr<Agent> NewAgent() {
    return std::make_unique<Agent>(config_, &source_, &client_, spool_.get(), nullptr, nullptr,
                                   &clock_, /*seed=*/42);
  }

  smbfleet::v1::ReportRequest Spooled(const std::string& id) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(id);
    r.set_reason("test");
    EXPECT_TRUE(spool_->Put(r).ok());
    return r;
  }

  std::vector<std::string> Ids(const std::vector<smbfleet::v1::ReportRequest>& reports) {
    std::vector<std::string> out;
    for (const auto& r : reports) out.push_back(r.report_id());
    return out;
  }

  std::vector<std::string> Rejected() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/rejected", ec)) {
      out.push_back(e.path().stem().string());
    }
    return out;
  }

  std::string dir_;
  AgentConfig config_;
  FakeSource source_;
  FakeClock clock_;
  FakeCollectorClient client_{&clock_};
  std::unique_ptr<Spool> spool_;
};

TEST_F(AgentLoopsTest, ReportsAfterTheSplayThenEveryIntervalAndAtOnceOnReportNow) {
  auto agent = NewAgent();
  std::thread run([&] { agent->Run(); });
  const std::thread::id scheduler = run.get_id();

  // Start: one wait of a random part of the splay, nothing reported before it ends.
  auto first = clock_.AwaitWait(scheduler, 1);
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(first->deadline, first->start);
  EXPECT_LE(first->deadline - first->start, config_.splay);
  EXPECT_THAT(client_.reports(), IsEmpty());
  clock_.AdvanceTo(first->deadline);
  ASSERT_TRUE(client_.AwaitReports(1));
  EXPECT_EQ(client_.reports()[0].reason(), "startup");

  // Then the interval, splayed by at most half the splay either way.
  auto second = clock_.AwaitWait(scheduler, 2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->start, first->deadline);
  EXPECT_GE(second->deadline - second->start, config_.interval - config_.splay / 2);
  EXPECT_LE(second->deadline - second->start, config_.interval + config_.splay / 2);

  // A ReportNow on the Watch stream reports at once, without the clock moving, and leaves the
  // schedule as it was.
  ASSERT_TRUE(client_.AwaitWatchCalls(1));
  smbfleet::v1::WatchResponse now;
  now.mutable_report_now()->set_reason("operator");
  client_.SendWatch(now);
  ASSERT_TRUE(client_.AwaitReports(2));
  EXPECT_EQ(client_.reports()[1].reason(), "nudge");
  EXPECT_EQ(clock_.Now(), first->deadline);
  auto third = clock_.AwaitWait(scheduler, 3);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->deadline, second->deadline);

  clock_.AdvanceTo(third->deadline);
  ASSERT_TRUE(client_.AwaitReports(3));
  EXPECT_EQ(client_.reports()[2].reason(), "schedule");

  // Stop while the scheduler waits for the next interval and the stream is open: Run returns
  // without the clock moving.
  ASSERT_TRUE(clock_.AwaitWait(scheduler, 4).has_value());
  EXPECT_TRUE(spool_->List()->empty());  // every report was acknowledged and removed
  agent->Stop();
  run.join();
  EXPECT_EQ(client_.reports().size(), 3u);
}

TEST_F(AgentLoopsTest, ReportNowSoonAfterAReportIsIgnored) {
  config_.min_nudge_interval = seconds(30);
  auto agent = NewAgent();
  std::thread run([&] { agent->Run(); });
  const std::thread::id scheduler = run.get_id();
  auto first = clock_.AwaitWait(scheduler, 1);
  ASSERT_TRUE(first.has_value());
  clock_.AdvanceTo(first->deadline);
  ASSERT_TRUE(client_.AwaitReports(1));
  ASSERT_TRUE(clock_.AwaitWait(scheduler, 2).has_value());
  ASSERT_TRUE(client_.AwaitWatchCalls(1));

  smbfleet::v1::WatchResponse now;
  now.mutable_report_now()->set_reason("operator");
  clock_.Advance(seconds(29));
  client_.SendWatch(now);
  // Ignored: the scheduler is not woken (a nudge would end its wait at once).
  EXPECT_FALSE(clock_.AwaitWait(scheduler, 3, milliseconds(300)).has_value());
  EXPECT_EQ(client_.reports().size(), 1u);

  clock_.Advance(seconds(1));
  client_.SendWatch(now);
  ASSERT_TRUE(client_.AwaitReports(2));
  EXPECT_EQ(client_.reports()[1].reason(), "nudge");
  auto after = clock_.AwaitWait(scheduler, 3);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->start, first->deadline + seconds(30));
  agent->Stop();
  run.join();
  EXPECT_EQ(client_.reports().size(), 2u);
}

TEST_F(AgentLoopsTest, CollectorNudgeIsLimitedByTheLastReport) {
  config_.min_nudge_interval = seconds(30);
  auto agent = NewAgent();
  EXPECT_TRUE(agent->CollectorNudge("first"));  // no report yet
  ASSERT_TRUE(agent->RunOnce("startup").ok());
  clock_.Advance(seconds(29));
  EXPECT_FALSE(agent->CollectorNudge("too soon"));
  clock_.Advance(seconds(1));
  EXPECT_TRUE(agent->CollectorNudge("in time"));
}

TEST_F(AgentLoopsTest, FlushRemovesOnlyAcknowledgedReports) {
  Spooled("r1");
  Spooled("r2");
  Spooled("r3");
  // Each report is still in the spool while the collector has it.
  std::vector<std::string> present;
  client_.OnReport([&](const smbfleet::v1::ReportRequest& r) {
    if (spool_->Get(r.report_id()).ok()) present.push_back(r.report_id());
  });
  client_.ScriptReports({absl::OkStatus(), absl::UnavailableError("collector busy")});
  auto agent = NewAgent();

  absl::Status s = agent->Flush();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(Ids(client_.reports()), ElementsAre("r1", "r2"));  // r3 waits for the next try
  EXPECT_THAT(*spool_->List(), ElementsAre("r2", "r3"));
  EXPECT_THAT(Rejected(), IsEmpty());

  s = agent->Flush();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(Ids(client_.reports()), ElementsAre("r1", "r2", "r2", "r3"));
  EXPECT_THAT(*spool_->List(), IsEmpty());
  EXPECT_THAT(present, ElementsAre("r1", "r2", "r2", "r3"));
}

TEST_F(AgentLoopsTest, FlushKeepsReportsOnRetryableErrorsAndMovesPermanentOnesAside) {
  struct Case {
    absl::Status answer;
    bool permanent;
  };
  const Case cases[] = {
      {absl::InvalidArgumentError("posture.shares[3].name: 300 bytes, limit 255"), true},
      {absl::ResourceExhaustedError("Sent message larger than max (5000000 vs. 4194304)"), true},
      {absl::UnavailableError("collector busy"), false},
      {absl::DeadlineExceededError("deadline exceeded"), false},
      {absl::PermissionDeniedError("certificate revoked"), false},
      {absl::UnauthenticatedError("certificate expired"), false},
      {absl::InternalError("stream reset"), false},
  };
  auto agent = NewAgent();
  int n = 0;
  for (const Case& c : cases) {
    std::string id = "c" + std::to_string(n++);
    Spooled(id);
    client_.ScriptReports({c.answer});
    absl::Status s = agent->Flush();
    EXPECT_EQ(IsPermanentReportError(c.answer), c.permanent) << c.answer;
    if (c.permanent) {
      EXPECT_TRUE(s.ok()) << c.answer;  // moved aside; nothing left to retry
      EXPECT_THAT(*spool_->List(), IsEmpty()) << c.answer;
      EXPECT_THAT(Rejected(), ::testing::Contains(id)) << c.answer;
    } else {
      EXPECT_EQ(s.code(), c.answer.code()) << c.answer;
      EXPECT_THAT(*spool_->List(), ElementsAre(id)) << c.answer;
      EXPECT_THAT(Rejected(), ::testing::Not(::testing::Contains(id))) << c.answer;
      ASSERT_TRUE(spool_->Remove(id).ok());
    }
  }
}

// The probe errors "spool" of a report, as "CODE: message".
std::vector<std::string> SpoolErrors(const smbfleet::v1::ReportRequest& r) {
  std::vector<std::string> out;
  for (const auto& e : r.posture().probe_errors()) {
    if (e.probe() == "spool") out.push_back(e.code() + ": " + e.message());
  }
  return out;
}

TEST_F(AgentLoopsTest, PoisonReportInTheMiddleIsSetAsideCountedAndTheRestDeliveredInOrder) {
  Spooled("r1");
  Spooled("r2");
  Spooled("r3");
  Spooled("r4");
  client_.ScriptReports({absl::OkStatus(),
                         absl::InvalidArgumentError("posture.shares[0].name: contains U+0000"),
                         absl::OkStatus(), absl::OkStatus()});
  auto agent = NewAgent();
  absl::Status s = agent->Flush();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(Ids(client_.reports()), ElementsAre("r1", "r2", "r3", "r4"));
  EXPECT_THAT(*spool_->List(), IsEmpty());
  EXPECT_THAT(Rejected(), ElementsAre("r2"));
  EXPECT_EQ(spool_->counts().rejected, 1u);

  // The next report tells the collector; once it is delivered the count starts over.
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  ASSERT_EQ(client_.reports().size(), 5u);
  EXPECT_THAT(SpoolErrors(client_.reports()[4]),
              ElementsAre(::testing::StartsWith("REJECTED: 1 reports refused")));
  EXPECT_TRUE(spool_->counts().empty());
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  EXPECT_THAT(SpoolErrors(client_.reports()[5]), IsEmpty());
}

TEST_F(AgentLoopsTest, CorruptSpoolFileIsSetAsideCountedAndDoesNotStopTheFlush) {
  Spooled("r1");
  Spooled("r2");
  Spooled("r3");
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    if (e.path().filename().string().find("-r2.report") == std::string::npos) continue;
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) - 3);  // torn
  }
  auto agent = NewAgent();
  absl::Status s = agent->Flush();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_THAT(Ids(client_.reports()), ElementsAre("r1", "r3"));
  EXPECT_THAT(*spool_->List(), IsEmpty());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/rejected/r2.corrupt"));
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  EXPECT_THAT(SpoolErrors(client_.reports().back()),
              ElementsAre(::testing::StartsWith("CORRUPT: 1 spooled reports")));
  EXPECT_TRUE(spool_->counts().empty());
}

TEST_F(AgentLoopsTest, DroppedCountsStayPendingUntilAReportCarryingThemIsDelivered) {
  spool_ = std::make_unique<Spool>(dir_, 2);
  ASSERT_TRUE(spool_->Open().ok());
  Spooled("r1");
  Spooled("r2");
  Spooled("r3");  // r1 dropped
  ASSERT_EQ(spool_->counts().dropped, 1u);
  client_.ScriptReports({absl::UnavailableError("down")});
  auto agent = NewAgent();
  // The new report (carrying the count) drops r2; the collector is down.
  EXPECT_FALSE(agent->RunOnce("schedule").ok());
  ASSERT_EQ(client_.reports().size(), 1u);
  EXPECT_EQ(client_.reports()[0].report_id(), "r3");
  EXPECT_EQ(spool_->counts().dropped, 2u);
  // The collector is back: r3, then the report that says one was dropped, are delivered.
  ASSERT_TRUE(agent->Flush().ok());
  ASSERT_EQ(client_.reports().size(), 3u);
  EXPECT_THAT(SpoolErrors(client_.reports()[2]),
              ElementsAre(::testing::StartsWith("DROPPED: 1 reports dropped")));
  EXPECT_EQ(spool_->counts().dropped, 1u);  // r2's drop: not told yet
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  EXPECT_THAT(SpoolErrors(client_.reports().back()),
              ElementsAre(::testing::StartsWith("DROPPED: 1 reports dropped")));
  EXPECT_TRUE(spool_->counts().empty());
}

TEST_F(AgentLoopsTest, UnchangedPostureGoesAsItsDigestAndWholeWhenAsked) {
  client_.set_digest_reports(true);
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce("startup").ok());
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  auto sent = client_.reports();
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_TRUE(sent[0].has_posture());  // nothing acknowledged yet
  EXPECT_FALSE(sent[1].has_posture());
  EXPECT_EQ(sent[1].posture_digest(), PostureDigest(sent[0].posture()));
  EXPECT_EQ(sent[1].reason(), "schedule");
  EXPECT_TRUE(sent[1].has_collected_at());
  EXPECT_THAT(*spool_->List(), IsEmpty());

  // The acknowledged digest survives a restart; a collector that does not hold it (another
  // database) asks for the posture, which goes again under the same report id.
  FakeCollectorClient fresh(&clock_);
  fresh.set_digest_reports(true);
  Agent restarted(config_, &source_, &fresh, spool_.get(), nullptr, nullptr, &clock_, 7);
  ASSERT_TRUE(restarted.RunOnce("startup").ok());
  ASSERT_TRUE(restarted.RunOnce("schedule").ok());
  sent = fresh.reports();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_FALSE(sent[0].has_posture());
  EXPECT_TRUE(sent[1].has_posture());
  EXPECT_EQ(sent[1].report_id(), sent[0].report_id());
  EXPECT_FALSE(sent[2].has_posture());
  EXPECT_THAT(*spool_->List(), IsEmpty());
}

TEST_F(AgentLoopsTest, ACollectorRefusingDigestOnlyReportsGetsThemWhole) {
  client_.set_digest_reports(true);
  ASSERT_TRUE(NewAgent()->RunOnce("startup").ok());
  // An older collector: it says nothing of digest reports and refuses a report without posture.
  FakeCollectorClient older(&clock_);
  older.ScriptReports({absl::InvalidArgumentError("report rejected: posture: missing")});
  Agent agent(config_, &source_, &older, spool_.get(), nullptr, nullptr, &clock_, 7);
  ASSERT_TRUE(agent.RunOnce("schedule").ok());
  ASSERT_TRUE(agent.RunOnce("schedule").ok());
  auto sent = older.reports();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_FALSE(sent[0].has_posture());
  EXPECT_TRUE(sent[1].has_posture());
  EXPECT_EQ(sent[1].report_id(), sent[0].report_id());
  EXPECT_TRUE(sent[2].has_posture());  // and the next ones whole
  EXPECT_THAT(Rejected(), IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/acked_digest"));
}

TEST_F(AgentLoopsTest, SpoolCountsMakeAReportGoWhole) {
  client_.set_digest_reports(true);
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce("startup").ok());
  // A report refused for good is counted in the next report's probe errors: a change.
  Spooled("00000000-0000-4000-8000-00000000000a");
  client_.ScriptReports({absl::InvalidArgumentError("bad")});
  ASSERT_TRUE(agent->Flush().ok());
  ASSERT_EQ(spool_->counts().rejected, 1u);
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  const auto last = client_.reports().back();
  ASSERT_TRUE(last.has_posture());
  EXPECT_THAT(SpoolErrors(last), ElementsAre(::testing::StartsWith("REJECTED: 1 reports")));
}

TEST_F(AgentLoopsTest, SourceIsCommittedOnlyOnceItsReportIsInTheSpool) {
  auto agent = NewAgent();
  // The spool cannot write (its directory is gone, a file in its place).
  std::filesystem::remove_all(dir_);
  { std::ofstream(dir_) << "not a directory"; }
  absl::Status s = agent->RunOnce("schedule");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(source_.commits, 0);
  EXPECT_THAT(client_.reports(), IsEmpty());
  std::filesystem::remove(dir_);
  ASSERT_TRUE(spool_->Open().ok());
  // Put succeeds: committed, whether or not the collector takes the report.
  client_.ScriptReports({absl::UnavailableError("down")});
  EXPECT_FALSE(agent->RunOnce("schedule").ok());
  EXPECT_EQ(source_.commits, 1);
  EXPECT_EQ(spool_->List()->size(), 1u);
}

TEST_F(AgentLoopsTest, WatchReconnectsWithCappedJitteredBackoffAndStopsPromptly) {
  client_.set_end_watch_at_once(true);
  config_.splay = seconds(0);
  auto agent = NewAgent();
  std::thread run([&] { agent->Run(); });

  ASSERT_TRUE(client_.AwaitWatchCalls(1));
  const std::thread::id watcher = client_.watch_thread();
  std::vector<milliseconds> waits;
  for (size_t k = 0; k < 8; ++k) {
    auto wait = clock_.AwaitWait(watcher, k + 1);
    ASSERT_TRUE(wait.has_value()) << k;
    auto ceiling = std::min<milliseconds>(seconds(1) * (1 << k), config_.max_backoff);
    auto waited = std::chrono::duration_cast<milliseconds>(wait->deadline - wait->start);
    EXPECT_GE(waited, milliseconds(0)) << k;
    EXPECT_LE(waited, ceiling) << k;
    waits.push_back(waited);
    clock_.AdvanceTo(wait->deadline);
    ASSERT_TRUE(client_.AwaitWatchCalls(k + 2)) << k;  // reconnected once the wait was over
    EXPECT_EQ(client_.watch_times()[k + 1], wait->deadline) << k;
  }
  // Full jitter: the waits are spread below their ceilings, not the ceilings themselves.
  int at_ceiling = 0;
  for (size_t k = 0; k < waits.size(); ++k) {
    at_ceiling += waits[k] == std::min<milliseconds>(seconds(1) * (1 << k), config_.max_backoff);
  }
  EXPECT_LT(at_ceiling, 8);

  // Stop during a backoff wait: the watch loop and Run return without the clock moving.
  ASSERT_TRUE(clock_.AwaitWait(watcher, 9).has_value());
  auto before = clock_.Now();
  agent->Stop();
  run.join();
  EXPECT_EQ(clock_.Now(), before);
  EXPECT_EQ(client_.watch_times().size(), 9u);
}

TEST_F(AgentLoopsTest, ChangeOrderOnTheStreamIsAppliedAckedAndFollowedByAnAfterChangeReport) {
  testing::FakeSettingsApplier applier;
  applier.values[{"share.encryptData", "finance"}] = "false";
  testing::TestApprovals approvals;
  ApproverTrust trust(approvals.Trust({"alice"}), dir_ + "-approver-set.pb");
  ChangeExecutorOptions options;
  options.trust = &trust;
  options.host = "fs01";
  options.changes.enforce = true;
  options.changes.allow = {"share.encryptData"};
  options.changes.journal_dir = dir_ + "-journal";
  std::filesystem::remove_all(options.changes.journal_dir);
  ChangeExecutor changes(options, &applier, &client_, &clock_);
  ASSERT_TRUE(changes.Open().ok());
  auto agent = NewAgent();
  agent->set_change_executor(&changes);
  std::thread run([&] { agent->Run(); });

  ASSERT_TRUE(client_.AwaitWatchCalls(1));
  EXPECT_THAT(client_.watch_requests()[0].completed_change_ids(), IsEmpty());
  smbfleet::v1::WatchResponse m;
  auto* order = m.mutable_change_order();
  order->set_change_id("chg-1");
  order->set_version(3);
  order->set_nonce("n1");
  auto* setting = order->add_settings();
  setting->set_setting("share.encryptData");
  setting->set_share("finance");
  setting->set_value("true");
  setting->set_expected_current("false");
  *order = approvals.Sign(
      *order, testing::TestApprovals::PayloadOf(*order, {"fs01"}, absl::Now() + absl::Hours(1)),
      {"alice"});
  client_.SendWatch(m);

  ASSERT_TRUE(client_.AwaitAcks(1));
  auto ack = client_.acks()[0];
  EXPECT_EQ(ack.change_id(), "chg-1");
  EXPECT_EQ(ack.version(), 3u);
  EXPECT_EQ(ack.result(), smbfleet::v1::AckChangeRequest::RESULT_APPLIED) << ack.message();
  EXPECT_EQ((applier.values[{"share.encryptData", "finance"}]), "true");
  // The report comes without the clock moving: it is not the scheduled one.
  ASSERT_TRUE(client_.AwaitReports(1));
  EXPECT_EQ(client_.reports()[0].reason(), "after_change");

  // A reconnect names the finished change, so that the collector does not send it again.
  client_.EndWatch();
  auto wait = clock_.AwaitWait(client_.watch_thread(), 1);
  ASSERT_TRUE(wait.has_value());
  clock_.AdvanceTo(wait->deadline);
  ASSERT_TRUE(client_.AwaitWatchCalls(2));
  EXPECT_THAT(client_.watch_requests()[1].completed_change_ids(), ElementsAre("chg-1"));
  agent->Stop();
  run.join();
  EXPECT_EQ(applier.applies, 1);
}

TEST_F(AgentLoopsTest, ApproverSetOnTheStreamIsTrustedForTheOrdersThatFollow) {
  testing::FakeSettingsApplier applier;
  applier.values[{"share.encryptData", "finance"}] = "false";
  testing::TestApprovals approvals;
  ApproverTrust trust(approvals.Trust({}), dir_ + "-approver-set.pb");
  std::filesystem::remove(dir_ + "-approver-set.pb");
  ChangeExecutorOptions options;
  options.trust = &trust;
  options.host = "fs01";
  options.changes.enforce = true;
  options.changes.allow = {"share.encryptData"};
  options.changes.journal_dir = dir_ + "-journal";
  std::filesystem::remove_all(options.changes.journal_dir);
  ChangeExecutor changes(options, &applier, &client_, &clock_);
  ASSERT_TRUE(changes.Open().ok());
  auto agent = NewAgent();
  agent->set_change_executor(&changes);
  agent->set_approver_trust(&trust);
  std::thread run([&] { agent->Run(); });
  ASSERT_TRUE(client_.AwaitWatchCalls(1));

  auto order_by_bob = [&](const std::string& id) {
    smbfleet::v1::WatchResponse m;
    auto* order = m.mutable_change_order();
    order->set_change_id(id);
    order->set_version(1);
    order->set_nonce("n-" + id);
    auto* setting = order->add_settings();
    setting->set_setting("share.encryptData");
    setting->set_share("finance");
    setting->set_value("true");
    *order = approvals.Sign(
        *order, testing::TestApprovals::PayloadOf(*order, {"fs01"}, absl::Now() + absl::Hours(1)),
        {"bob"});
    return m;
  };
  client_.SendWatch(order_by_bob("before-set"));
  ASSERT_TRUE(client_.AwaitAcks(1));
  EXPECT_EQ(client_.acks()[0].result(), smbfleet::v1::AckChangeRequest::RESULT_REFUSED);

  smbfleet::v1::WatchResponse set;
  *set.mutable_approver_set() = approvals.Set(1, {"bob"});
  client_.SendWatch(set);
  client_.SendWatch(order_by_bob("after-set"));
  ASSERT_TRUE(client_.AwaitAcks(2));
  EXPECT_EQ(client_.acks()[1].result(), smbfleet::v1::AckChangeRequest::RESULT_APPLIED)
      << client_.acks()[1].message();
  EXPECT_EQ(trust.serial(), 1u);
  agent->Stop();
  run.join();
  EXPECT_EQ(applier.applies, 1);
}

// A source whose posture has shares; paths as the platform reports them.
class SharesSource : public PostureSource {
 public:
  absl::StatusOr<smbfleet::v1::Posture> Collect() override {
    smbfleet::v1::Posture p;
    p.mutable_host()->set_hostname("fs01");
    for (const auto& [name, path] : shares) {
      smbfleet::v1::Share* share = p.add_shares();
      share->set_name(name);
      share->set_path(path);
    }
    return p;
  }
  std::string Describe() const override { return "shares"; }
  std::vector<std::pair<std::string, std::string>> shares;
};

TEST_F(AgentLoopsTest, EveryBenchmarkReachesTheReportAndSurvivesARestart) {
  config_.benchmark_interval = std::chrono::hours(24);
  int runs = 0;
  BenchmarkFn benchmark = [&runs]() -> absl::StatusOr<BenchmarkRun> {
    ++runs;
    BenchmarkRun run;
    smbfleet::v1::Benchmark& crypto = run.crypto.emplace_back();
    crypto.set_algorithm(smbfleet::v1::AES_128_GCM);
    crypto.mutable_measured_at()->set_seconds(::time(nullptr));
    smbfleet::v1::CompressionBenchmark& compression = run.compression.emplace_back();
    compression.set_algorithm(smbfleet::v1::COMPRESSION_LZ77_HUFFMAN);
    compression.set_corpus("vm-disk");
    compression.set_ratio(1.9);
    compression.mutable_measured_at()->set_seconds(::time(nullptr));
    run.memory.set_page_fault_seconds(12.5e-6);
    run.memory.mutable_measured_at()->set_seconds(::time(nullptr));
    return run;
  };
  Agent first(config_, &source_, &client_, spool_.get(), benchmark, nullptr, &clock_, 1);
  ASSERT_TRUE(first.RunOnce("startup").ok());
  ASSERT_TRUE(first.RunOnce("schedule").ok());
  EXPECT_EQ(runs, 1);  // once per benchmark_interval
  // A restarted agent takes the kept run instead of benchmarking again.
  Agent restarted(config_, &source_, &client_, spool_.get(), benchmark, nullptr, &clock_, 2);
  ASSERT_TRUE(restarted.RunOnce("startup").ok());
  EXPECT_EQ(runs, 1);
  ASSERT_EQ(client_.reports().size(), 3u);
  for (const auto& report : client_.reports()) {
    ASSERT_EQ(report.posture().benchmarks_size(), 1);
    ASSERT_EQ(report.posture().compression_benchmarks_size(), 1);
    EXPECT_EQ(report.posture().compression_benchmarks(0).corpus(), "vm-disk");
    EXPECT_EQ(report.posture().compression_benchmarks(0).ratio(), 1.9);
    EXPECT_EQ(report.posture().memory_benchmark().page_fault_seconds(), 12.5e-6);
  }
}

// A busy host may give a benchmark run too little CPU time: a part it could not measure keeps
// its last measurement, and the run is due again within the hour, not a day later.
TEST_F(AgentLoopsTest, ABenchmarkRunABusyHostCutShortRunsAgainWithinTheHour) {
  config_.benchmark_interval = std::chrono::hours(24);
  std::vector<absl::StatusOr<BenchmarkRun>> answers;
  auto crypto_row = [](smbfleet::v1::CryptoAlgorithm algorithm) {
    smbfleet::v1::Benchmark row;
    row.set_algorithm(algorithm);
    row.mutable_measured_at()->set_seconds(::time(nullptr));
    return row;
  };
  BenchmarkRun whole;
  whole.crypto.push_back(crypto_row(smbfleet::v1::AES_128_GCM));
  whole.compression.emplace_back().set_corpus("vm-disk");
  whole.memory.set_page_fault_seconds(12.5e-6);
  whole.memory.mutable_measured_at()->set_seconds(::time(nullptr));
  answers.push_back(whole);
  answers.push_back(absl::DeadlineExceededError("crypto benchmark: no cell got CPU time"));
  BenchmarkRun crypto_only;  // compression and page faults gave up
  crypto_only.crypto.push_back(crypto_row(smbfleet::v1::AES_256_GCM));
  crypto_only.cut_short = true;
  answers.push_back(crypto_only);
  BenchmarkRun later = whole;
  later.memory.set_page_fault_seconds(14e-6);
  answers.push_back(later);
  size_t runs = 0;
  BenchmarkFn benchmark = [&]() -> absl::StatusOr<BenchmarkRun> {
    return answers[std::min(runs++, answers.size() - 1)];
  };
  Agent agent(config_, &source_, &client_, spool_.get(), benchmark, nullptr, &clock_, 1);
  auto report = [&](std::chrono::minutes after) {
    clock_.Advance(after);
    EXPECT_TRUE(agent.RunOnce("schedule").ok());
    return client_.reports().back().posture();
  };
  report(std::chrono::minutes(0));
  EXPECT_EQ(runs, 1u);
  smbfleet::v1::Posture p = report(std::chrono::minutes(24 * 60));  // due: the whole run fails
  EXPECT_EQ(runs, 2u);
  ASSERT_EQ(p.benchmarks_size(), 1);
  EXPECT_EQ(p.benchmarks(0).algorithm(), smbfleet::v1::AES_128_GCM);  // the last run's
  report(std::chrono::minutes(59));
  EXPECT_EQ(runs, 2u);
  p = report(std::chrono::minutes(2));  // an hour later: crypto only
  EXPECT_EQ(runs, 3u);
  ASSERT_EQ(p.benchmarks_size(), 1);
  EXPECT_EQ(p.benchmarks(0).algorithm(), smbfleet::v1::AES_256_GCM);
  ASSERT_EQ(p.compression_benchmarks_size(), 1);  // kept from the first run
  EXPECT_EQ(p.compression_benchmarks(0).corpus(), "vm-disk");
  EXPECT_EQ(p.memory_benchmark().page_fault_seconds(), 12.5e-6);
  report(std::chrono::minutes(59));
  EXPECT_EQ(runs, 3u);
  p = report(std::chrono::minutes(2));  // an hour later again: whole
  EXPECT_EQ(runs, 4u);
  EXPECT_EQ(p.memory_benchmark().page_fault_seconds(), 14e-6);
  report(std::chrono::minutes(23 * 60));  // a whole run: the next one is a day later
  EXPECT_EQ(runs, 4u);
}

// A benchmark run that gets no CPU until the test gives it, then returns one crypto row of
// `algorithm`. An agent waits for a run in progress when it goes: give the CPU before that
// (Release, also from a guard declared after the agent, so that a failed assertion cannot hang).
class HeldBackBenchmark {
 public:
  explicit HeldBackBenchmark(smbfleet::v1::CryptoAlgorithm algorithm) : algorithm_(algorithm) {}
  void Release() {
    std::call_once(released_, [this] { cpu_given_.set_value(); });
  }
  int runs() const { return runs_; }
  BenchmarkFn Fn() {
    return [this]() -> absl::StatusOr<BenchmarkRun> {
      ++runs_;
      cpu_.wait();
      BenchmarkRun run;
      smbfleet::v1::Benchmark& crypto = run.crypto.emplace_back();
      crypto.set_algorithm(algorithm_);
      crypto.mutable_measured_at()->set_seconds(::time(nullptr));
      return run;
    };
  }

 private:
  smbfleet::v1::CryptoAlgorithm algorithm_;
  std::promise<void> cpu_given_;
  std::shared_future<void> cpu_ = cpu_given_.get_future().share();
  std::once_flag released_;
  std::atomic<int> runs_{0};
};

// The benchmark threads run at idle priority, and a busy host may give them no CPU for minutes:
// the report waits for them a bounded time, then goes without, and a later one carries the run.
TEST_F(AgentLoopsTest, AReportWaitsForABenchmarkRunOnlyABoundedTime) {
  config_.benchmark_interval = std::chrono::hours(24);
  HeldBackBenchmark benchmark(smbfleet::v1::AES_128_GCM);
  Agent agent(config_, &source_, &client_, spool_.get(), benchmark.Fn(), nullptr, &clock_, 1);
  absl::Cleanup release = [&benchmark] { benchmark.Release(); };
  agent.set_benchmark_wait(std::chrono::milliseconds(20));
  ASSERT_TRUE(agent.RunOnce("startup").ok());
  ASSERT_EQ(client_.reports().size(), 1u);
  EXPECT_EQ(client_.reports()[0].posture().benchmarks_size(), 0);  // sent without it

  benchmark.Release();
  agent.set_benchmark_wait(std::chrono::seconds(60));
  ASSERT_TRUE(agent.RunOnce("schedule").ok());
  ASSERT_EQ(client_.reports().size(), 2u);
  ASSERT_EQ(client_.reports()[1].posture().benchmarks_size(), 1);  // the same run, done
  EXPECT_EQ(client_.reports()[1].posture().benchmarks(0).algorithm(), smbfleet::v1::AES_128_GCM);
  EXPECT_EQ(benchmark.runs(), 1);
}

// An agent stopped (or run with --once) while its benchmark run goes on waits for it and keeps
// it: the next start reports it instead of benchmarking again.
TEST_F(AgentLoopsTest, ABenchmarkRunStillGoingAtExitIsKeptForTheNextStart) {
  config_.benchmark_interval = std::chrono::hours(24);
  HeldBackBenchmark benchmark(smbfleet::v1::AES_256_GCM);
  {
    Agent first(config_, &source_, &client_, spool_.get(), benchmark.Fn(), nullptr, &clock_, 1);
    absl::Cleanup release = [&benchmark] { benchmark.Release(); };
    first.set_benchmark_wait(std::chrono::milliseconds(20));
    ASSERT_TRUE(first.RunOnce("startup").ok());
  }
  Agent restarted(config_, &source_, &client_, spool_.get(), benchmark.Fn(), nullptr, &clock_, 2);
  restarted.set_benchmark_wait(std::chrono::milliseconds(20));
  ASSERT_TRUE(restarted.RunOnce("startup").ok());
  EXPECT_EQ(benchmark.runs(), 1);
  ASSERT_EQ(client_.reports().size(), 2u);
  EXPECT_EQ(client_.reports()[0].posture().benchmarks_size(), 0);
  ASSERT_EQ(client_.reports()[1].posture().benchmarks_size(), 1);
  EXPECT_EQ(client_.reports()[1].posture().benchmarks(0).algorithm(), smbfleet::v1::AES_256_GCM);
}

TEST_F(AgentLoopsTest, MemoryIsReleasedOnceAfterStartAndAgainAfterEachBenchmark) {
  config_.benchmark_interval = seconds(1500);  // due again in the fourth cycle (600 s ± 30 s)
  int benchmarks = 0;
  BenchmarkFn benchmark = [&benchmarks]() -> absl::StatusOr<BenchmarkRun> {
    ++benchmarks;
    BenchmarkRun run;
    run.crypto.emplace_back().set_algorithm(smbfleet::v1::AES_128_GCM);
    return run;
  };
  std::atomic<int> releases{0};
  std::atomic<size_t> delivered_at_release{0};
  Agent agent(config_, &source_, &client_, spool_.get(), benchmark, nullptr, &clock_, 42);
  agent.set_release_memory([&] {
    delivered_at_release = client_.reports().size();
    ++releases;
  });
  std::thread run([&] { agent.Run(); });
  const std::thread::id scheduler = run.get_id();
  std::vector<int> releases_after_cycle;
  for (size_t cycle = 1; cycle <= 4; ++cycle) {
    auto wait = clock_.AwaitWait(scheduler, cycle);
    ASSERT_TRUE(wait.has_value());
    clock_.AdvanceTo(wait->deadline);
    ASSERT_TRUE(client_.AwaitReports(cycle));
    // Waiting again: the cycle, its delivery and any release are done.
    ASSERT_TRUE(clock_.AwaitWait(scheduler, cycle + 1).has_value());
    releases_after_cycle.push_back(releases);
    if (cycle == 1) {
      EXPECT_EQ(delivered_at_release, 1u);  // after the report was delivered
    }
  }
  agent.Stop();
  run.join();
  EXPECT_EQ(benchmarks, 2);  // at start and in the fourth cycle
  EXPECT_THAT(releases_after_cycle, ElementsAre(1, 1, 1, 2));
  EXPECT_EQ(delivered_at_release, 4u);
}

TEST_F(AgentLoopsTest, NamedSharesAreSampledOncePerIntervalAndOthersNever) {
  SharesSource source;
  source.shares = {{"Projects", "/srv/projects"}, {"home", "/srv/home"}, {"nopath", ""}};
  config_.compression_sampling.enabled = true;
  config_.compression_sampling.shares = {"projects", "nopath"};
  config_.compression_sampling.interval = std::chrono::hours(24);
  std::vector<std::string> sampled;
  Agent agent(config_, &source, &client_, spool_.get(), nullptr, nullptr, &clock_, 1);
  agent.set_share_sampler([&sampled](const std::string& path) {
    sampled.push_back(path);
    smbfleet::v1::CompressibilitySample sample;
    sample.set_ratio(2.5);
    sample.set_files_sampled(16);
    return sample;
  });
  ASSERT_TRUE(agent.RunOnce("startup").ok());
  clock_.Advance(std::chrono::hours(23));
  ASSERT_TRUE(agent.RunOnce("schedule").ok());
  EXPECT_THAT(sampled, ElementsAre("/srv/projects"));  // case of the name ignored
  clock_.Advance(std::chrono::hours(1));
  ASSERT_TRUE(agent.RunOnce("schedule").ok());
  EXPECT_THAT(sampled, ElementsAre("/srv/projects", "/srv/projects"));

  ASSERT_EQ(client_.reports().size(), 3u);
  for (const auto& report : client_.reports()) {
    const auto& shares = report.posture().shares();
    ASSERT_EQ(shares.size(), 3);
    EXPECT_EQ(shares[0].compressibility().ratio(), 2.5);
    EXPECT_EQ(shares[0].compressibility().files_sampled(), 16u);
    EXPECT_FALSE(shares[1].has_compressibility());  // not named: never read
    EXPECT_EQ(shares[2].compressibility().not_sampled_reason(), "path not known");
  }
}

TEST_F(AgentLoopsTest, SamplingOffByDefaultReadsNothing) {
  SharesSource source;
  source.shares = {{"projects", "/srv/projects"}};
  config_.compression_sampling.shares = {"projects"};  // named, but not enabled
  bool called = false;
  Agent agent(config_, &source, &client_, spool_.get(), nullptr, nullptr, &clock_, 1);
  agent.set_share_sampler([&called](const std::string&) {
    called = true;
    return smbfleet::v1::CompressibilitySample();
  });
  ASSERT_TRUE(agent.RunOnce("startup").ok());
  EXPECT_FALSE(called);
  EXPECT_FALSE(client_.reports()[0].posture().shares(0).has_compressibility());
}

}  // namespace
}  // namespace smbfleet::agent
