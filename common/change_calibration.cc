#include "common/change_calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return lower + (upper - lower) / 2;
}

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

}  // namespace smbfleet
