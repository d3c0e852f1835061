#include "common/change_calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/median.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;

// The figures of one class before they are reduced to medians.
struct Collected {
  size_t changes = 0;
  std::vector<double> predicted_points;
  std::vector<double> measured_points;
  std::vector<double> points_errors;
  std::vector<double> predicted_ratios;
  std::vector<double> measured_ratios;
  std::vector<double> ratio_quotients;
};

void Collect(const v1::MeasuredImpact& m, Collected& c) {
  ++c.changes;
  const bool known = m.prediction_known() && std::isfinite(m.predicted_cpu_change_points());
  const bool measured_points = m.has_cpu_change_points() && std::isfinite(m.cpu_change_points());
  if (known) c.predicted_points.push_back(m.predicted_cpu_change_points());
  if (measured_points) c.measured_points.push_back(m.cpu_change_points());
  if (known && measured_points) {
    c.points_errors.push_back(m.cpu_change_points() - m.predicted_cpu_change_points());
  }

  const bool predicted_ratio =
      m.prediction_known() && std::isfinite(m.predicted_cpu_ratio()) && m.predicted_cpu_ratio() > 0;
  const bool measured_ratio = m.has_cpu_per_byte_ratio() && std::isfinite(m.cpu_per_byte_ratio()) &&
                              m.cpu_per_byte_ratio() > 0;
  if (predicted_ratio) c.predicted_ratios.push_back(m.predicted_cpu_ratio());
  if (measured_ratio) c.measured_ratios.push_back(m.cpu_per_byte_ratio());
  if (predicted_ratio && measured_ratio) {
    c.ratio_quotients.push_back(m.cpu_per_byte_ratio() / m.predicted_cpu_ratio());
  }
}

}  // namespace

std::vector<CalibrationGroup> Calibrate(const std::vector<CalibrationInput>& inputs) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, Collected> classes;
  for (const CalibrationInput& in : inputs) {
    if (!in.host.has_measured()) continue;
    const v1::PredictedCost& cost = in.host.impact().cost();
    Key key{in.platform.empty() ? "unknown" : in.platform, cost.before(), cost.after()};
    Collect(in.host.measured(), classes[key]);
  }

  std::vector<CalibrationGroup> groups;
  groups.reserve(classes.size());
  for (auto& [key, c] : classes) {
    CalibrationGroup g;
    std::tie(g.platform, g.protection_before, g.protection_after) = key;
    g.changes = c.changes;
    g.predicted_cpu_change_points = Median(std::move(c.predicted_points));
    g.measured_cpu_change_points = Median(std::move(c.measured_points));
    g.cpu_change_points_pairs = c.points_errors.size();
    g.cpu_change_points_error = Median(std::move(c.points_errors));
    g.predicted_cpu_ratio = Median(std::move(c.predicted_ratios));
    g.measured_cpu_per_byte_ratio = Median(std::move(c.measured_ratios));
    g.cpu_per_byte_pairs = c.ratio_quotients.size();
    g.cpu_per_byte_measured_over_predicted = Median(std::move(c.ratio_quotients));
    if (g.cpu_per_byte_pairs >= kMinChangesForCalibration) {
      g.suggested_cpu_per_byte_factor = g.cpu_per_byte_measured_over_predicted;
      g.suggestion = absl::StrFormat("x%.2f (%d changes)", *g.suggested_cpu_per_byte_factor,
                                     g.cpu_per_byte_pairs);
    } else {
      g.suggestion = absl::StrFormat("not enough changes (%d of %d)", g.cpu_per_byte_pairs,
                                     kMinChangesForCalibration);
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

std::string CalibrationPlatform(v1::Platform platform) {
  if (platform == v1::PLATFORM_UNSPECIFIED || !v1::Platform_IsValid(platform)) return "";
  absl::string_view name = v1::Platform_Name(platform);
  absl::ConsumePrefix(&name, "PLATFORM_");
  return absl::AsciiStrToLower(name);
}

bool ApplyCalibration(const v1::CostModelCalibration& calibration, const std::string& platform,
                      v1::PredictedCost* cost) {
  if (!cost->known() || !(cost->cpu_ratio() > 0) || !std::isfinite(cost->cpu_ratio())) {
    return false;
  }
  const std::string& class_platform = platform.empty() ? std::string("unknown") : platform;
  for (const v1::CostModelCalibrationGroup& g : calibration.groups()) {
    if (g.platform() != class_platform || g.protection_before() != cost->before() ||
        g.protection_after() != cost->after()) {
      continue;
    }
    const double factor = g.suggested_cpu_per_byte_factor();
    if (!g.has_suggested_cpu_per_byte_factor() || !(factor > 0) || !std::isfinite(factor)) {
      return false;
    }
    cost->set_cpu_ratio(cost->cpu_ratio() * factor);
    cost->set_calibration_id(calibration.id());
    cost->set_calibration_factor(factor);
    return true;
  }
  return false;
}

v1::CostModelCalibrationGroup ToProto(const CalibrationGroup& g) {
  v1::CostModelCalibrationGroup out;
  out.set_platform(g.platform);
  out.set_protection_before(g.protection_before);
  out.set_protection_after(g.protection_after);
  out.set_changes(static_cast<uint32_t>(g.changes));
  if (g.predicted_cpu_change_points) {
    out.set_predicted_cpu_change_points(*g.predicted_cpu_change_points);
  }
  if (g.measured_cpu_change_points) {
    out.set_measured_cpu_change_points(*g.measured_cpu_change_points);
  }
  if (g.cpu_change_points_error) out.set_cpu_change_points_error(*g.cpu_change_points_error);
  out.set_cpu_change_points_pairs(static_cast<uint32_t>(g.cpu_change_points_pairs));
  if (g.predicted_cpu_ratio) out.set_predicted_cpu_ratio(*g.predicted_cpu_ratio);
  if (g.measured_cpu_per_byte_ratio) {
    out.set_measured_cpu_per_byte_ratio(*g.measured_cpu_per_byte_ratio);
  }
  if (g.cpu_per_byte_measured_over_predicted) {
    out.set_cpu_per_byte_measured_over_predicted(*g.cpu_per_byte_measured_over_predicted);
  }
  out.set_cpu_per_byte_pairs(static_cast<uint32_t>(g.cpu_per_byte_pairs));
  if (g.suggested_cpu_per_byte_factor) {
    out.set_suggested_cpu_per_byte_factor(*g.suggested_cpu_per_byte_factor);
  }
  out.set_suggestion(g.suggestion);
  return out;
}

}  // namespace smbfleet
