#include "collector/metrics/prometheus_text.h"

#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace smbfleet::collector {
namespace {

bool IsNameChar(char c, bool first) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && absl::ascii_isdigit(static_cast<unsigned char>(c)));
}

absl::StatusOr<double> ParseValue(absl::string_view s) {
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::nan("");
  double v = 0;
  if (!absl::SimpleAtod(s, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("'", s, "' is not a number"));
  }
  return v;
}

absl::StatusOr<PromSample> ParseLine(absl::string_view line) {
  PromSample s;
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0)) ++i;
  if (i == 0) return absl::InvalidArgumentError("no metric name");
  s.name = std::string(line.substr(0, i));
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start)) ++i;
      if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
        return absl::InvalidArgumentError(absl::StrCat("bad label at column ", i + 1));
      }
      std::string key(line.substr(start, i - start));
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\' && i + 1 < line.size()) {
          ++i;
          value.push_back(line[i] == 'n' ? '\n' : line[i]);
        } else {
          value.push_back(line[i]);
        }
        ++i;
      }
      if (i >= line.size()) return absl::InvalidArgumentError("unterminated label value");
      ++i;  // the closing quote
      s.labels[key] = std::move(value);
    }
  }
  std::vector<absl::string_view> rest = absl::StrSplit(line.substr(i), ' ', absl::SkipWhitespace());
  if (rest.empty() || rest.size() > 2) {
    return absl::InvalidArgumentError("expected a value and at most a timestamp after the name");
  }
  absl::StatusOr<double> v = ParseValue(rest[0]);
  if (!v.ok()) return v.status();
  s.value = *v;
  return s;
}

}  // namespace

absl::StatusOr<std::vector<PromSample>> ParsePrometheusText(absl::string_view text) {
  std::vector<PromSample> samples;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    absl::StatusOr<PromSample> s = ParseLine(line);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics line ", number, " '", line.substr(0, 200), "': ", s.status().message()));
    }
    samples.push_back(*std::move(s));
  }
  return samples;
}

std::optional<double> FindSample(const std::vector<PromSample>& samples, absl::string_view name,
                                 const std::map<std::string, std::string>& labels) {
  for (const PromSample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

std::optional<double> SampleIn(absl::string_view text, absl::string_view name,
                               const std::map<std::string, std::string>& labels) {
  absl::StatusOr<std::vector<PromSample>> samples = ParsePrometheusText(text);
  if (!samples.ok()) return std::nullopt;
  return FindSample(*samples, name, labels);
}

}  // namespace smbfleet::collector
