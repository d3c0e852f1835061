// The load counters around a change: the rate helpers, the sampler's ring, the after-window
// records, and their way onto the ack (ChangeExecutor) and onto reports (Agent).

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/core/agent.h"
#include "agent/core/change_executor.h"
#include "agent/core/counter_sampler.h"
#include "agent/core/counter_source.h"
#include "agent/core/counter_windows.h"
#include "agent/core/testing/fake_clock.h"
#include "agent/core/testing/fake_collector_client.h"
#include "agent/core/testing/fake_settings_applier.h"
#include "agent/core/testing/test_approvals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::AckChangeRequest;
using smbfleet::v1::ChangeCounters;
using smbfleet::v1::ChangeOrder;
using smbfleet::v1::CounterWindow;
using smbfleet::v1::SettingChange;
using testing::FakeClock;
using testing::FakeCollectorClient;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::TestApprovals;

TEST(DeltaTest, GrowthSinceThePreviousReadingAbsentFirstAndWhenBackwards) {
  Delta d;
  EXPECT_EQ(d.Update(100), std::nullopt);
  EXPECT_EQ(d.Update(150), 50u);
  EXPECT_EQ(d.Update(150), 0u);
  EXPECT_EQ(d.Update(10), std::nullopt);  // wrapped or reset
  EXPECT_EQ(d.Update(25), 15u);           // from the new base
}

TEST(DeltaSumTest, NewKeysCountWholeGoneKeysNothingBackwardsIsAbsent) {
  DeltaSum d;
  EXPECT_EQ(d.Update({{"a", 100}, {"b", 10}}), std::nullopt);
  // a grew 20, b is gone, c is new with 5.
  EXPECT_EQ(d.Update({{"a", 120}, {"c", 5}}), 25u);
  EXPECT_EQ(d.Update({{"a", 120}, {"c", 5}}), 0u);
  EXPECT_EQ(d.Update({{"a", 119}, {"c", 9}}), std::nullopt);
  d.Reset();
  EXPECT_EQ(d.Update({{"a", 200}}), std::nullopt);
  EXPECT_EQ(d.Update({}), 0u);
}

// Counters from a script, one reading per Sample().
class ScriptedSource : public CounterSource {
 public:
  CounterReading Sample() override {
    CounterReading r;
    r.sample.set_cpu_percent(static_cast<double>(++calls));
    r.errors = errors;
    return r;
  }
  int calls = 0;
  std::vector<std::string> errors;
};

class CounterFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/counter_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    sampler_ = NewSampler();
  }

  std::unique_ptr<CounterSampler> NewSampler() {
    // 10 s samples, 60 s windows: a ring of 7.
    return std::make_unique<CounterSampler>(&source_, std::chrono::seconds(10),
                                            std::chrono::seconds(60), &clock_,
                                            [this] { return now_; });
  }

  // n samples, 10 s apart, each followed by a Tick of `windows` when given.
  void Sample(int n, CounterWindows* windows = nullptr) {
    for (int i = 0; i < n; ++i) {
      now_ += absl::Seconds(10);
      sampler_->SampleOnce();
      if (windows != nullptr) windows->Tick();
    }
  }

  static std::vector<double> Cpu(const CounterWindow& w) {
    std::vector<double> out;
    for (const auto& s : w.samples()) out.push_back(s.cpu_percent());
    return out;
  }

  std::string dir_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  ScriptedSource source_;
  FakeClock clock_;
  std::unique_ptr<CounterSampler> sampler_;
};

TEST_F(CounterFixture, RingKeepsOneWindowAndCutsWindowsByTime) {
  EXPECT_EQ(CounterSampler::CapacityFor(std::chrono::seconds(10), std::chrono::seconds(60)), 7u);
  EXPECT_EQ(CounterSampler::CapacityFor(std::chrono::seconds(1), std::chrono::hours(24)),
            kMaxCounterSamples);
  Sample(20);
  EXPECT_EQ(sampler_->size(), 7u);
  CounterWindow w = sampler_->Window(now_ - absl::Seconds(30), now_);
  EXPECT_EQ(Cpu(w), (std::vector<double>{17, 18, 19, 20}));
  EXPECT_EQ(w.interval().seconds(), 10);
  EXPECT_EQ(w.end().seconds(), absl::ToUnixSeconds(now_));
  EXPECT_FALSE(w.complete());
}

TEST_F(CounterFixture, SamplerThreadSamplesEveryInterval) {
  sampler_->Start();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 1; i <= 3; ++i) {
    // The thread takes its first sample at once, then one per interval of the fake clock.
    while (sampler_->size() < static_cast<size_t>(i) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    ASSERT_EQ(sampler_->size(), static_cast<size_t>(i));
    clock_.Advance(std::chrono::seconds(10));
  }
  sampler_->Stop();
}

TEST_F(CounterFixture, AfterWindowIsFilledOnceTheWindowPassedAndDroppedWhenDelivered) {
  CounterWindows windows(dir_, sampler_.get());
  int filled = 0;  // the agent's nudge for a report with reason change_counters
  windows.set_on_filled([&filled] { ++filled; });
  ASSERT_TRUE(windows.Open().ok());
  Sample(3, &windows);
  ASSERT_TRUE(windows.StartAfter("c1", 2).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/c1@2.counters.json"));
  Sample(5, &windows);
  EXPECT_THAT(windows.Due(), IsEmpty());  // 50 s of a 60 s window
  EXPECT_EQ(filled, 0);
  Sample(1, &windows);
  EXPECT_EQ(filled, 1);
  Sample(2, &windows);
  EXPECT_EQ(filled, 1);  // once per window, not per sample
  std::vector<ChangeCounters> due = windows.Due();
  ASSERT_THAT(due, SizeIs(1));
  EXPECT_EQ(due[0].change_id(), "c1");
  EXPECT_EQ(due[0].version(), 2u);
  EXPECT_TRUE(due[0].after().complete());
  EXPECT_EQ(Cpu(due[0].after()), (std::vector<double>{4, 5, 6, 7, 8, 9}));
  // Still due (and the same) until a report carrying it is acknowledged, across a restart.
  Sample(10, &windows);
  CounterWindows reopened(dir_, sampler_.get());
  ASSERT_TRUE(reopened.Open().ok());
  ASSERT_THAT(reopened.Due(), SizeIs(1));
  EXPECT_EQ(reopened.Due()[0].SerializeAsString(), due[0].SerializeAsString());
  reopened.Delivered(due);
  EXPECT_THAT(reopened.Due(), IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/c1@2.counters.json"));
}

TEST_F(CounterFixture, RestartDuringTheAfterWindowKeepsTheRecordWithLaterSamples) {
  {
    CounterWindows windows(dir_, sampler_.get());
    ASSERT_TRUE(windows.Open().ok());
    Sample(2, &windows);
    ASSERT_TRUE(windows.StartAfter("c1", 1).ok());
    Sample(2, &windows);
  }
  // A new process: an empty ring, the record back from the journal folder.
  sampler_ = NewSampler();
  CounterWindows windows(dir_, sampler_.get());
  ASSERT_TRUE(windows.Open().ok());
  EXPECT_EQ(windows.pending(), 1u);
  Sample(4, &windows);
  std::vector<ChangeCounters> due = windows.Due();
  ASSERT_THAT(due, SizeIs(1));
  EXPECT_EQ(Cpu(due[0].after()), (std::vector<double>{5, 6, 7, 8}));
}

TEST_F(CounterFixture, ARecordNeverDeliveredIsDroppedAfterAWeek) {
  CounterWindows windows(dir_, sampler_.get());
  ASSERT_TRUE(windows.Open().ok());
  ASSERT_TRUE(windows.StartAfter("c1", 1).ok());
  now_ += absl::Hours(24 * 7) + absl::Seconds(1);
  windows.Tick();
  EXPECT_EQ(windows.pending(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/c1@1.counters.json"));
}

TEST_F(CounterFixture, AnUnreadableRecordIsMovedAsideNotLoaded) {
  std::filesystem::create_directories(dir_);
  { std::ofstream(dir_ + "/c1@1.counters.json") << "{not json"; }
  CounterWindows windows(dir_, sampler_.get());
  ASSERT_TRUE(windows.Open().ok());
  EXPECT_EQ(windows.pending(), 0u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/c1@1.counters.json.bad"));
}

// The executor and the agent with counters, over one journal folder.
class CountersAroundAChangeTest : public CounterFixture {
 protected:
  void SetUp() override {
    CounterFixture::SetUp();
    windows_ = std::make_unique<CounterWindows>(dir_, sampler_.get());
    ASSERT_TRUE(windows_->Open().ok());
    options_.changes.enforce = true;
    options_.changes.allow = {"server.requireSigning"};
    options_.changes.journal_dir = dir_;
    options_.wall_now = [this] { return now_; };
    options_.host = "fs01";
    options_.counters = windows_.get();
    trust_ = std::make_unique<ApproverTrust>(approvals_.Trust({"alice"}), dir_ + "/approver.pb");
    options_.trust = trust_.get();
    applier_.values[{"server.requireSigning", ""}] = "false";
    config_.spool_dir = dir_ + "/spool";
    config_.benchmark_interval = std::chrono::seconds(0);
    spool_ = std::make_unique<Spool>(config_.spool_dir, 100);
    ASSERT_TRUE(spool_->Open().ok());
  }

  ChangeOrder Signed(const std::string& expected_current = "false") {
    ChangeOrder o;
    o.set_change_id("c1");
    o.set_version(1);
    o.set_nonce("n-c1");
    SettingChange* s = o.add_settings();
    s->set_setting("server.requireSigning");
    s->set_value("true");
    s->set_expected_current(expected_current);
    return approvals_.Sign(o, TestApprovals::PayloadOf(o, {"fs01"}, now_ + absl::Hours(1)),
                           {"alice"});
  }

  std::unique_ptr<Agent> NewAgent() {
    auto agent = std::make_unique<Agent>(config_, &posture_, &client_, spool_.get(), nullptr,
                                         nullptr, &clock_, 7);
    agent->set_counter_windows(windows_.get());
    return agent;
  }

  class Posture : public PostureSource {
   public:
    absl::StatusOr<smbfleet::v1::Posture> Collect() override {
      smbfleet::v1::Posture p;
      p.mutable_host()->set_hostname("fs01");
      return p;
    }
    std::string Describe() const override { return "fake"; }
  };

  std::unique_ptr<CounterWindows> windows_;
  ChangeExecutorOptions options_;
  TestApprovals approvals_;
  std::unique_ptr<ApproverTrust> trust_;
  testing::FakeSettingsApplier applier_;
  FakeCollectorClient client_{&clock_};
  AgentConfig config_;
  Posture posture_;
  std::unique_ptr<Spool> spool_;
};

TEST_F(CountersAroundAChangeTest, AckCarriesTheWindowBeforeAndAReportTheWindowAfter) {
  Sample(10, windows_.get());  // 100 s of load; the ring keeps the last 60 s
  ChangeExecutor executor(options_, &applier_, &client_, &clock_);
  ASSERT_TRUE(executor.Open().ok());
  client_.ScriptAcks({absl::UnavailableError("collector down")});
  executor.Submit(Signed());
  executor.Drain();
  executor.Drain();  // the retried ack
  std::vector<AckChangeRequest> acks = client_.acks();
  ASSERT_THAT(acks, SizeIs(2));
  EXPECT_EQ(acks[0].result(), AckChangeRequest::RESULT_APPLIED) << acks[0].message();
  const CounterWindow& before = acks[0].counters_before();
  EXPECT_TRUE(before.complete());
  EXPECT_EQ(Cpu(before), (std::vector<double>{4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(before.end().seconds(), absl::ToUnixSeconds(now_));
  EXPECT_EQ(before.start().seconds(), absl::ToUnixSeconds(now_) - 60);
  EXPECT_FALSE(before.has_summary());
  // The retry carries the journaled window, not a new one.
  EXPECT_EQ(acks[1].SerializeAsString(), acks[0].SerializeAsString());

  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  ASSERT_THAT(client_.reports(), SizeIs(1));
  EXPECT_THAT(client_.reports()[0].change_counters(), IsEmpty());  // the window is still open

  Sample(6, windows_.get());
  client_.ScriptReports({absl::UnavailableError("collector down")});
  EXPECT_FALSE(agent->RunOnce("schedule").ok());
  ASSERT_TRUE(agent->Flush().ok());  // the spooled report again
  std::vector<smbfleet::v1::ReportRequest> reports = client_.reports();
  ASSERT_THAT(reports, SizeIs(3));
  for (size_t i : {1u, 2u}) {
    ASSERT_THAT(reports[i].change_counters(), SizeIs(1)) << i;
    const ChangeCounters& c = reports[i].change_counters(0);
    EXPECT_EQ(c.change_id(), "c1");
    EXPECT_EQ(c.version(), 1u);
    EXPECT_TRUE(c.after().complete());
    EXPECT_EQ(Cpu(c.after()), (std::vector<double>{11, 12, 13, 14, 15, 16}));
    EXPECT_FALSE(c.has_before());
  }
  EXPECT_EQ(reports[1].report_id(), reports[2].report_id());
  // Acknowledged: forgotten.
  EXPECT_EQ(windows_->pending(), 0u);
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  EXPECT_THAT(client_.reports().back().change_counters(), IsEmpty());
}

TEST_F(CountersAroundAChangeTest, DigestOnlyReportsCarryTheWindowToo) {
  client_.set_digest_reports(true);
  auto agent = NewAgent();
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  ASSERT_TRUE(windows_->StartAfter("c9", 3).ok());
  Sample(7, windows_.get());
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  std::vector<smbfleet::v1::ReportRequest> reports = client_.reports();
  ASSERT_THAT(reports, SizeIs(2));
  EXPECT_FALSE(reports[1].posture_digest().empty());
  EXPECT_FALSE(reports[1].has_posture());
  ASSERT_THAT(reports[1].change_counters(), SizeIs(1));
  EXPECT_EQ(reports[1].change_counters(0).change_id(), "c9");
  EXPECT_EQ(windows_->pending(), 0u);
}

TEST_F(CountersAroundAChangeTest, UnreadableCountersAreAProbeErrorOfTheReport) {
  auto agent = NewAgent();
  source_.errors = {"smb bytes per second: sock_diag: the kernel refused the dump"};
  Sample(1, windows_.get());
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  const smbfleet::v1::Posture p = client_.reports().back().posture();
  ASSERT_EQ(p.probe_errors_size(), 1);
  EXPECT_EQ(p.probe_errors(0).probe(), "counters");
  EXPECT_EQ(p.probe_errors(0).code(), "UNREADABLE");
  EXPECT_THAT(p.probe_errors(0).message(), ::testing::HasSubstr("the kernel refused the dump"));
  EXPECT_EQ(p.probe_errors(0).sections_size(), 0);
  // Readable again: no probe error.
  source_.errors.clear();
  Sample(1, windows_.get());
  ASSERT_TRUE(agent->RunOnce("schedule").ok());
  EXPECT_EQ(client_.reports().back().posture().probe_errors_size(), 0);
}

TEST_F(CountersAroundAChangeTest, AnUntouchedHostSendsNoCounters) {
  Sample(3, windows_.get());
  ChangeExecutor executor(options_, &applier_, &client_, &clock_);
  ASSERT_TRUE(executor.Open().ok());
  executor.Submit(Signed("true"));  // the precondition fails: nothing applied
  executor.Drain();
  ASSERT_THAT(client_.acks(), SizeIs(1));
  EXPECT_EQ(client_.acks()[0].result(), AckChangeRequest::RESULT_PRECONDITION_FAILED);
  EXPECT_FALSE(client_.acks()[0].has_counters_before());
  EXPECT_EQ(windows_->pending(), 0u);
}

}  // namespace
}  // namespace smbfleet::agent
