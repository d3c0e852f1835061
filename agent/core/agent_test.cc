#include "agent/core/agent.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class FakeSource : public PostureSource {
 public:
  explicit FakeSource(smbfleet::v1::Posture p) : posture_(std::move(p)) {}
  absl::StatusOr<smbfleet::v1::Posture> Collect() override { return posture_; }
  std::string Describe() const override { return "fake"; }

 private:
  smbfleet::v1::Posture posture_;
};

TEST(NewReportIdTest, UuidV4AndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewReportId();
    ASSERT_THAT(id, MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                 "[0-9a-f]{12}"));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(BuildReportTest, FillsIdentityLabelsAndBenchmark) {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_platform(smbfleet::v1::PLATFORM_SAMBA);
  FakeSource source(p);
  AgentConfig config;
  config.labels = {{"site", "ams"}};
  BenchmarkRun run;
  smbfleet::v1::Benchmark& b = run.crypto.emplace_back();
  b.set_algorithm(smbfleet::v1::AES_128_GCM);
  b.set_bytes_per_second(1e9);
  smbfleet::v1::CompressionBenchmark& c = run.compression.emplace_back();
  c.set_algorithm(smbfleet::v1::COMPRESSION_LZ4);
  c.set_corpus("text");
  c.set_ratio(4.5);
  run.memory.set_page_fault_seconds(2e-6);
  run.memory.mutable_measured_at()->set_seconds(1700000000);
  auto report = BuildReport(source, config, "schedule", run,
                            [](smbfleet::v1::HostInfo* h) { h->mutable_cpu()->set_aes_ni(true); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->reason(), "schedule");
  EXPECT_FALSE(report->posture().host().hostname().empty());
  EXPECT_FALSE(report->posture().host().agent_version().empty());
  EXPECT_EQ(report->posture().host().labels().at("site"), "ams");
  EXPECT_TRUE(report->posture().host().cpu().aes_ni());
  EXPECT_TRUE(report->posture().has_collected_at());
  ASSERT_EQ(report->posture().benchmarks_size(), 1);
  EXPECT_EQ(report->posture().benchmarks(0).algorithm(), smbfleet::v1::AES_128_GCM);
  ASSERT_EQ(report->posture().compression_benchmarks_size(), 1);
  EXPECT_EQ(report->posture().compression_benchmarks(0).algorithm(), smbfleet::v1::COMPRESSION_LZ4);
  EXPECT_EQ(report->posture().compression_benchmarks(0).ratio(), 4.5);
  EXPECT_EQ(report->posture().memory_benchmark().page_fault_seconds(), 2e-6);

  // A run that did not measure the page fault leaves the posture without one.
  run.memory.Clear();
  report = BuildReport(source, config, "schedule", run, nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->posture().has_memory_benchmark());
}

TEST(FitReportTest, DropsOldestEventsAndCountsThem) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(NewReportId());
  for (int i = 0; i < 1000; ++i) {
    auto* e = r.mutable_posture()->add_events();
    e->set_event_id(static_cast<uint32_t>(i));
    e->set_message(std::string(100, 'm'));
  }
  ASSERT_GT(r.ByteSizeLong(), 20000u);
  ASSERT_TRUE(FitReport(&r, 20000));
  EXPECT_LE(r.ByteSizeLong(), 20000u);
  const auto& p = r.posture();
  EXPECT_GT(p.events_dropped(), 0u);
  EXPECT_EQ(p.events_dropped() + static_cast<uint64_t>(p.events_size()), 1000u);
  EXPECT_EQ(p.events(p.events_size() - 1).event_id(), 999u);  // the newest is kept
  ASSERT_GE(p.probe_errors_size(), 1);
  EXPECT_THAT(p.probe_errors(0).message(), HasSubstr("events left out"));
}

TEST(FitReportTest, FailsWhenTheCoreIsTooLarge) {
  smbfleet::v1::ReportRequest r;
  for (int i = 0; i < 100; ++i) r.mutable_posture()->add_shares()->set_name(std::string(100, 's'));
  EXPECT_FALSE(FitReport(&r, 1000));
}

}  // namespace
}  // namespace smbfleet::agent
