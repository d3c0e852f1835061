#include "common/change_counters.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/median.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;

// google::protobuf::util::TimeUtil's bounds: 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
constexpr int64_t kMinTimestampSeconds = -62'135'596'800;
constexpr int64_t kMaxTimestampSeconds = 253'402'300'799;

// Protobuf's valid range (years 1 to 9999): a time outside it, or with nanos outside
// [0, 1e9), is not a time. Inside it, Micros cannot overflow.
bool ValidTime(const google::protobuf::Timestamp& ts) {
  return ts.seconds() >= kMinTimestampSeconds && ts.seconds() <= kMaxTimestampSeconds &&
         ts.nanos() >= 0 && ts.nanos() < 1'000'000'000;
}

int64_t Micros(const google::protobuf::Timestamp& ts) {
  return ts.seconds() * 1000000 + ts.nanos() / 1000;
}

bool CpuInRange(double v) { return std::isfinite(v) && v >= 0 && v <= 100 + kCpuPercentSlack; }

bool BytesInRange(double v) { return std::isfinite(v) && v >= 0 && v <= kMaxSmbBytesPerSecond; }

bool SampleInRange(const v1::CounterSample& s) {
  if (s.has_cpu_percent() && !CpuInRange(s.cpu_percent())) return false;
  if (s.has_smb_cpu_percent() && !CpuInRange(s.smb_cpu_percent())) return false;
  if (s.has_smb_read_bytes_per_second() && !BytesInRange(s.smb_read_bytes_per_second())) {
    return false;
  }
  if (s.has_smb_write_bytes_per_second() && !BytesInRange(s.smb_write_bytes_per_second())) {
    return false;
  }
  return true;
}

std::string Signed(double v, int digits) { return absl::StrFormat("%+.*f", digits, v); }

std::string Ratio(double v) { return absl::StrFormat("x%.2f", v); }

}  // namespace

absl::StatusOr<CheckedWindow> CheckWindow(const v1::CounterWindow& window, absl::string_view what) {
  if (window.samples_size() > kMaxCounterSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", window.samples_size(), " samples, limit ", kMaxCounterSamples));
  }
  if (!window.has_start() || !window.has_end()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the window has no start or no end"));
  }
  if (!ValidTime(window.start()) || !ValidTime(window.end())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the window's start or end is not a valid time"));
  }
  const int64_t start = Micros(window.start());
  const int64_t end = Micros(window.end());
  if (end < start) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the window ends before it starts"));
  }
  if (window.interval().seconds() < 0 || window.interval().nanos() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": negative interval"));
  }
  CheckedWindow out;
  out.window = window;
  out.window.clear_samples();
  out.window.clear_summary();
  for (const auto& s : window.samples()) {
    if (!s.has_at() || !ValidTime(s.at()) || Micros(s.at()) < start || Micros(s.at()) > end ||
        !SampleInRange(s)) {
      ++out.dropped;
      continue;
    }
    *out.window.add_samples() = s;
  }
  *out.window.mutable_summary() = Summarize(out.window);
  return out;
}

v1::CounterSummary Summarize(const v1::CounterWindow& window) {
  std::vector<double> cpu, smb_cpu, bytes;
  std::vector<uint64_t> memory;
  double cpu_sum = 0;
  double mb_sum = 0;
  for (const auto& s : window.samples()) {
    if (s.has_cpu_percent()) cpu.push_back(s.cpu_percent());
    if (s.has_smb_cpu_percent()) smb_cpu.push_back(s.smb_cpu_percent());
    if (s.has_available_memory_bytes()) memory.push_back(s.available_memory_bytes());
    if (s.has_smb_read_bytes_per_second() && s.has_smb_write_bytes_per_second()) {
      const double b = s.smb_read_bytes_per_second() + s.smb_write_bytes_per_second();
      bytes.push_back(b);
      if (s.has_cpu_percent() && b >= kMinBytesPerSecondForCpuPerByte) {
        cpu_sum += s.cpu_percent();
        mb_sum += b / 1e6;
      }
    }
  }
  v1::CounterSummary out;
  out.set_samples(static_cast<uint32_t>(window.samples_size()));
  if (auto m = Median(cpu)) out.set_cpu_percent(*m);
  if (auto m = Median(smb_cpu)) out.set_smb_cpu_percent(*m);
  if (auto m = Median(bytes)) out.set_smb_bytes_per_second(*m);
  if (auto m = Median(memory)) out.set_available_memory_bytes(*m);
  if (mb_sum > 0) out.set_cpu_percent_per_mb_per_second(cpu_sum / mb_sum);
  return out;
}

v1::MeasuredImpact Measure(const v1::CounterSummary& before, const v1::CounterSummary& after,
                           const v1::PredictedCost& predicted) {
  v1::MeasuredImpact m;
  if (before.has_cpu_percent() && after.has_cpu_percent()) {
    m.set_cpu_change_points(after.cpu_percent() - before.cpu_percent());
  }
  if (before.has_cpu_percent_per_mb_per_second() && after.has_cpu_percent_per_mb_per_second() &&
      before.cpu_percent_per_mb_per_second() != 0) {
    m.set_cpu_per_byte_ratio(after.cpu_percent_per_mb_per_second() /
                             before.cpu_percent_per_mb_per_second());
  }
  if (before.has_smb_bytes_per_second() && after.has_smb_bytes_per_second() &&
      before.smb_bytes_per_second() != 0) {
    m.set_smb_bytes_ratio(after.smb_bytes_per_second() / before.smb_bytes_per_second());
  }
  m.set_predicted_cpu_change_points(predicted.cpu_change_points());
  m.set_predicted_cpu_ratio(predicted.cpu_ratio());
  m.set_predicted_throughput_ratio(predicted.throughput_ratio());
  m.set_prediction_known(predicted.known());

  // The prediction beside each figure where the cost model made one (a ratio of 0 is unknown).
  auto beside = [&](bool has, const std::string& text) {
    return has && predicted.known() ? absl::StrCat(" (predicted ", text, ")") : std::string();
  };
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat(
      "CPU ",
      m.has_cpu_change_points() ? absl::StrCat(Signed(m.cpu_change_points(), 1), " points")
                                : "not measured",
      beside(true, absl::StrCat(Signed(predicted.cpu_change_points(), 1)))));
  parts.push_back(absl::StrCat(
      "CPU per byte ", m.has_cpu_per_byte_ratio() ? Ratio(m.cpu_per_byte_ratio()) : "not measured",
      beside(predicted.cpu_ratio() > 0, Ratio(predicted.cpu_ratio()))));
  parts.push_back(absl::StrCat(
      "SMB traffic ", m.has_smb_bytes_ratio() ? Ratio(m.smb_bytes_ratio()) : "not measured",
      beside(predicted.throughput_ratio() > 0, Ratio(predicted.throughput_ratio()))));
  m.set_summary(absl::StrJoin(parts, "; "));
  return m;
}

}  // namespace smbfleet
