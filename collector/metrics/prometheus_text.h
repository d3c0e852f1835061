#ifndef SMBFLEET_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_
#define SMBFLEET_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_

// A reader of the Prometheus text exposition format, for tests that scrape /metrics: sample
// lines `name{label="value",...} number [timestamp]`; # HELP / # TYPE lines and blank lines are
// skipped.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet::collector {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Errors name the line and what is wrong with it.
absl::StatusOr<std::vector<PromSample>> ParsePrometheusText(absl::string_view text);

// The value of the sample named `name` with exactly `labels`; nullopt when there is none.
std::optional<double> FindSample(const std::vector<PromSample>& samples, absl::string_view name,
                                 const std::map<std::string, std::string>& labels = {});

// Parses `text` and finds the sample; nullopt when the text does not parse or has no such sample.
std::optional<double> SampleIn(absl::string_view text, absl::string_view name,
                               const std::map<std::string, std::string>& labels = {});

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_METRICS_PROMETHEUS_TEXT_H_
