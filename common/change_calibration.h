#ifndef SMBFLEET_COMMON_CHANGE_CALIBRATION_H_
#define SMBFLEET_COMMON_CHANGE_CALIBRATION_H_

// The cost model against what changes measured (issue 20): the change hosts with a measured
// impact grouped by host class, each group's predicted and measured medians and a suggested
// correction for the model's CPU per byte. Pure: no I/O, no clock. It suggests; it never changes
// the model's parameters.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "smbfleet/v1/change.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet {

// A class needs at least this many changes with both CPU-per-byte figures for a suggestion.
inline constexpr size_t kMinChangesForCalibration = 3;

// One change host and the platform it runs ("samba", "windows"; the host store knows it, the
// change host does not). An empty platform is grouped as "unknown".
struct CalibrationInput {
  std::string platform;
  smbfleet::v1::ChangeHost host;
};

// A host class: the platform and the protection transition the cost model priced
// (impact.cost.before -> impact.cost.after).
struct CalibrationGroup {
  std::string platform;
  std::string protection_before;
  std::string protection_after;
  size_t changes = 0;  // change hosts with a measured impact

  // CPU change points, after minus before: medians over the hosts that have each figure, and
  // the median of (measured - predicted) over the hosts that have both.
  std::optional<double> predicted_cpu_change_points;
  std::optional<double> measured_cpu_change_points;
  std::optional<double> cpu_change_points_error;
  size_t cpu_change_points_pairs = 0;

  // CPU per byte, after / before: the model's cpu_ratio and the measured cpu_per_byte_ratio,
  // and the median of measured / predicted over the hosts that have both (predicted > 0).
  std::optional<double> predicted_cpu_ratio;
  std::optional<double> measured_cpu_per_byte_ratio;
  std::optional<double> cpu_per_byte_measured_over_predicted;
  size_t cpu_per_byte_pairs = 0;

  // What to multiply the model's CPU per byte by for this class: the median above, set only with
  // at least kMinChangesForCalibration pairs. `suggestion` says it in words either way, e.g.
  // "x1.12 (5 changes)" or "not enough changes (2 of 3)".
  std::optional<double> suggested_cpu_per_byte_factor;
  std::string suggestion;
};

// Groups the inputs with a measured impact by (platform, protection before, protection after),
// sorted by those three. A prediction counts only where the cost model knew it (prediction_known;
// a ratio of 0 is unknown); a measured figure only where it is present.
std::vector<CalibrationGroup> Calibrate(const std::vector<CalibrationInput>& inputs);

// The platform as a class names it: "samba", "windows"; "" for PLATFORM_UNSPECIFIED (grouped as
// "unknown").
std::string CalibrationPlatform(smbfleet::v1::Platform platform);

// Multiplies `cost`'s cpu_ratio by `calibration`'s suggested factor for the class (`platform`,
// cost.before, cost.after) and names the calibration and factor in `cost`; `platform` as
// CalibrationPlatform gives it ("" is "unknown"). Leaves `cost` as it is, and returns false, when
// the calibration has no factor for the class or the model did not know the prediction (known
// false, or a cpu_ratio of 0).
bool ApplyCalibration(const smbfleet::v1::CostModelCalibration& calibration,
                      const std::string& platform, smbfleet::v1::PredictedCost* cost);

// A group as CostModelCalibrationGroup (admin.proto, change.proto).
smbfleet::v1::CostModelCalibrationGroup ToProto(const CalibrationGroup& group);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_CHANGE_CALIBRATION_H_
