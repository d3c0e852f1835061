#ifndef SMBFLEET_COMMON_CHANGE_COUNTERS_H_
#define SMBFLEET_COMMON_CHANGE_COUNTERS_H_

// Counters around a change: the windows an agent samples before and after it applies an order,
// what the collector keeps of them (a checked window and its medians) and the measured effect
// beside the cost model's prediction. Pure: no I/O, no clock.

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet {

// A window with more samples than this is refused whole.
inline constexpr int kMaxCounterSamples = 2000;
// CPU percentages up to this much over 100 are rounding, not a broken counter.
inline constexpr double kCpuPercentSlack = 5.0;
// No SMB server moves more than this (1 TB/s); a larger rate is a broken counter.
inline constexpr double kMaxSmbBytesPerSecond = 1e12;
// CPU per byte counts only samples that moved at least this much.
inline constexpr double kMinBytesPerSecondForCpuPerByte = 1e6;

// A window as the collector keeps it: the samples that passed the checks and their summary.
struct CheckedWindow {
  smbfleet::v1::CounterWindow window;
  size_t dropped = 0;  // samples out of the window's time or out of range
};

// Checks a window an agent sent. `what` names it in errors ("change c-1 on fs01, before"). An
// error refuses the whole window: more than kMaxCounterSamples samples, start or end missing,
// end before start, a negative interval. A sample outside [start, end], with a value that is not
// finite or out of range (cpu 0..100 + slack, bytes 0..kMaxSmbBytesPerSecond) is dropped and
// counted. The summary the agent may have set is replaced by Summarize's.
absl::StatusOr<CheckedWindow> CheckWindow(const smbfleet::v1::CounterWindow& window,
                                          absl::string_view what);

// The medians of each counter over the samples that have it (smb bytes: read + write, over the
// samples with both), and CPU per MB/s: the sum of cpu_percent over the sum of MB/s (10^6
// bytes) over the samples that have both and moved at least 1 MB/s. Absent when no sample has
// what a figure needs. Takes samples as they are: CheckWindow first for anything from an agent.
smbfleet::v1::CounterSummary Summarize(const smbfleet::v1::CounterWindow& window);

// After vs before, each figure absent when a side lacks it or its denominator is 0, with the
// prediction copied beside it and a one-line summary, e.g. "CPU +3.1 points (predicted +2.5);
// CPU per byte x1.40 (predicted x1.30); SMB traffic x0.96 (predicted x0.98)".
smbfleet::v1::MeasuredImpact Measure(const smbfleet::v1::CounterSummary& before,
                                     const smbfleet::v1::CounterSummary& after,
                                     const smbfleet::v1::PredictedCost& predicted);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_CHANGE_COUNTERS_H_
