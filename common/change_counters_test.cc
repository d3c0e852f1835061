#include "common/change_counters.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::HasSubstr;

constexpr int64_t kStart = 1'800'000'000;

struct S {
  int64_t at = 0;  // seconds after kStart
  std::optional<double> cpu = std::nullopt;
  std::optional<double> read = std::nullopt;
  std::optional<double> write = std::nullopt;
  std::optional<uint64_t> memory = std::nullopt;
};

v1::CounterWindow Window(const std::vector<S>& samples, int64_t length = 600) {
  v1::CounterWindow w;
  w.mutable_start()->set_seconds(kStart);
  w.mutable_end()->set_seconds(kStart + length);
  w.mutable_interval()->set_seconds(10);
  for (const S& s : samples) {
    auto* out = w.add_samples();
    out->mutable_at()->set_seconds(kStart + s.at);
    if (s.cpu) out->set_cpu_percent(*s.cpu);
    if (s.read) out->set_smb_read_bytes_per_second(*s.read);
    if (s.write) out->set_smb_write_bytes_per_second(*s.write);
    if (s.memory) out->set_available_memory_bytes(*s.memory);
  }
  return w;
}

TEST(SummarizeTest, MediansOverTheSamplesThatHaveEachCounter) {
  v1::CounterSummary s = Summarize(Window({
      {10, 10.0, 1e6, 1e6, 4000},
      {20, 30.0, 3e6, 1e6, std::nullopt},
      {30, 20.0, 2e6, std::nullopt, 2000},  // no write: not in bytes
      {40, std::nullopt, 5e6, 1e6, 3000},
  }));
  EXPECT_EQ(s.samples(), 4u);
  EXPECT_DOUBLE_EQ(s.cpu_percent(), 20.0);          // of 10, 20, 30
  EXPECT_DOUBLE_EQ(s.smb_bytes_per_second(), 4e6);  // of 2e6, 4e6, 6e6
  EXPECT_EQ(s.available_memory_bytes(), 3000u);     // of 2000, 3000, 4000
  EXPECT_FALSE(s.has_smb_cpu_percent());            // no sample has it
  // cpu 10 + 30 over 2 + 4 MB/s; the third has no write, the fourth no cpu.
  EXPECT_DOUBLE_EQ(s.cpu_percent_per_mb_per_second(), 40.0 / 6.0);
}

TEST(SummarizeTest, AnEvenCountTakesTheMiddleTwo) {
  v1::CounterSummary s = Summarize(Window({{1, 10.0}, {2, 40.0}, {3, 20.0}, {4, 30.0}}));
  EXPECT_DOUBLE_EQ(s.cpu_percent(), 25.0);
}

TEST(SummarizeTest, CpuPerByteNeedsOneMegabytePerSecond) {
  v1::CounterSummary s = Summarize(Window({{1, 5.0, 4e5, 5e5}, {2, 7.0, 0.0, 0.0}}));
  EXPECT_TRUE(s.has_smb_bytes_per_second());
  EXPECT_FALSE(s.has_cpu_percent_per_mb_per_second());
}

TEST(SummarizeTest, AnEmptyWindowHasNoFigures) {
  v1::CounterSummary s = Summarize(Window({}));
  EXPECT_EQ(s.samples(), 0u);
  EXPECT_FALSE(s.has_cpu_percent());
  EXPECT_FALSE(s.has_smb_bytes_per_second());
  EXPECT_FALSE(s.has_available_memory_bytes());
  EXPECT_FALSE(s.has_cpu_percent_per_mb_per_second());
}

TEST(CheckWindowTest, DropsAndCountsSamplesOutOfTimeOrRange) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v1::CounterWindow w = Window({
      {10, 10.0},
      {-5, 90.0},             // before start
      {700, 90.0},            // after end
      {20, 104.0},            // within the slack
      {30, 150.0},            // cpu out of range
      {40, nan},              // not finite
      {50, 10.0, -1.0, 0.0},  // negative bytes
      {60, 12.0, 1e13, 0.0},  // faster than any server
  });
  w.mutable_summary()->set_cpu_percent(99);  // what an agent said: replaced
  auto checked = CheckWindow(w, "change c-1 on fs01, before");
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->dropped, 6u);
  ASSERT_EQ(checked->window.samples_size(), 2);
  EXPECT_EQ(checked->window.summary().samples(), 2u);
  EXPECT_DOUBLE_EQ(checked->window.summary().cpu_percent(), 57.0);
  EXPECT_EQ(checked->window.start().seconds(), kStart);
}

TEST(CheckWindowTest, RefusesAWindowOverTheLimitOrWithoutItsBounds) {
  std::vector<S> many(kMaxCounterSamples + 1, S{1, 1.0});
  auto over = CheckWindow(Window(many), "change c-1 on fs01, after");
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(std::string(over.status().message()),
              HasSubstr("change c-1 on fs01, after: 2001 samples, limit 2000"));

  std::vector<S> exactly(kMaxCounterSamples, S{1, 1.0});
  EXPECT_TRUE(CheckWindow(Window(exactly), "w").ok());

  v1::CounterWindow no_end = Window({});
  no_end.clear_end();
  EXPECT_THAT(std::string(CheckWindow(no_end, "w").status().message()), HasSubstr("no end"));

  // Hostile times: refused or dropped, never arithmetic on them.
  v1::CounterWindow far = Window({});
  far.mutable_end()->set_seconds(std::numeric_limits<int64_t>::max());
  EXPECT_THAT(std::string(CheckWindow(far, "w").status().message()), HasSubstr("not a valid time"));
  v1::CounterWindow odd_sample = Window({{10, 10.0}, {20, 20.0}});
  odd_sample.mutable_samples(1)->mutable_at()->set_seconds(std::numeric_limits<int64_t>::min());
  auto checked = CheckWindow(odd_sample, "w");
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_EQ(checked->dropped, 1u);
  EXPECT_EQ(checked->window.samples_size(), 1);

  v1::CounterWindow backwards = Window({}, -10);
  EXPECT_THAT(std::string(CheckWindow(backwards, "w").status().message()),
              HasSubstr("ends before it starts"));
}

v1::CounterSummary Summary(std::optional<double> cpu, std::optional<double> per_mb,
                           std::optional<double> bytes) {
  v1::CounterSummary s;
  if (cpu) s.set_cpu_percent(*cpu);
  if (per_mb) s.set_cpu_percent_per_mb_per_second(*per_mb);
  if (bytes) s.set_smb_bytes_per_second(*bytes);
  return s;
}

TEST(MeasureTest, AfterVersusBeforeBesideThePrediction) {
  v1::PredictedCost cost;
  cost.set_known(true);
  cost.set_cpu_change_points(2.5);
  cost.set_cpu_ratio(1.3);
  cost.set_throughput_ratio(0.98);
  v1::MeasuredImpact m = Measure(Summary(10.0, 0.5, 5e7), Summary(13.1, 0.7, 4.8e7), cost);
  EXPECT_NEAR(m.cpu_change_points(), 3.1, 1e-9);
  EXPECT_NEAR(m.cpu_per_byte_ratio(), 1.4, 1e-9);
  EXPECT_NEAR(m.smb_bytes_ratio(), 0.96, 1e-9);
  EXPECT_DOUBLE_EQ(m.predicted_cpu_change_points(), 2.5);
  EXPECT_DOUBLE_EQ(m.predicted_cpu_ratio(), 1.3);
  EXPECT_DOUBLE_EQ(m.predicted_throughput_ratio(), 0.98);
  EXPECT_TRUE(m.prediction_known());
  EXPECT_EQ(m.summary(),
            "CPU +3.1 points (predicted +2.5); CPU per byte x1.40 (predicted x1.30); "
            "SMB traffic x0.96 (predicted x0.98)");
}

TEST(MeasureTest, MissingInputsOrZeroDenominatorsAreNotMeasured) {
  v1::PredictedCost unknown;  // no benchmark: no prediction to show
  v1::MeasuredImpact m = Measure(Summary(std::nullopt, 0.0, 0.0), Summary(12.0, 0.7, 4e7), unknown);
  EXPECT_FALSE(m.has_cpu_change_points());
  EXPECT_FALSE(m.has_cpu_per_byte_ratio());
  EXPECT_FALSE(m.has_smb_bytes_ratio());
  EXPECT_FALSE(m.prediction_known());
  EXPECT_EQ(m.summary(), "CPU not measured; CPU per byte not measured; SMB traffic not measured");

  v1::PredictedCost cpu_only;
  cpu_only.set_known(true);
  cpu_only.set_cpu_change_points(-1.0);
  v1::MeasuredImpact n =
      Measure(Summary(20.0, std::nullopt, 1e6), Summary(18.0, 0.4, 2e6), cpu_only);
  EXPECT_EQ(n.summary(),
            "CPU -2.0 points (predicted -1.0); CPU per byte not measured; SMB traffic x2.00");
}

}  // namespace
}  // namespace smbfleet
