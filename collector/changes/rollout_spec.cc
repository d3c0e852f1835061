#include "collector/changes/rollout_spec.h"

#include <algorithm>
#include <array>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace smbfleet::collector::changes {
namespace {

constexpr uint8_t kEveryDay = 0x7f;
constexpr std::array<absl::string_view, 7> kDayNames = {"mon", "tue", "wed", "thu",
                                                        "fri", "sat", "sun"};
constexpr absl::string_view kWindowExample = "e.g. site=ams:Sat 22:00-06:00 UTC+01:00";

absl::Status WindowError(absl::string_view text, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("--window \"", text, "\": ", problem, " (", kWindowExample, ")"));
}

absl::StatusOr<int> ParseDay(absl::string_view window, absl::string_view day) {
  std::string lower = absl::AsciiStrToLower(day);
  for (size_t i = 0; i < kDayNames.size(); ++i) {
    if (lower == kDayNames[i]) return static_cast<int>(i);
  }
  return WindowError(window, absl::StrCat("\"", day, "\" is not a day (Mon ... Sun, or daily)"));
}

absl::StatusOr<uint8_t> ParseDays(absl::string_view window, absl::string_view days) {
  if (absl::AsciiStrToLower(days) == "daily") return kEveryDay;
  std::vector<absl::string_view> range = absl::StrSplit(days, '-');
  if (range.size() == 2) {
    ASSIGN_OR_RETURN(int first, ParseDay(window, range[0]));
    ASSIGN_OR_RETURN(int last, ParseDay(window, range[1]));
    uint8_t bits = 0;
    for (int d = first;; d = (d + 1) % 7) {  // "Fri-Mon" wraps over the weekend
      bits |= static_cast<uint8_t>(1 << d);
      if (d == last) break;
    }
    return bits;
  }
  if (range.size() > 2) return WindowError(window, absl::StrCat("bad day range \"", days, "\""));
  uint8_t bits = 0;
  for (absl::string_view day : absl::StrSplit(days, ',')) {
    ASSIGN_OR_RETURN(int d, ParseDay(window, day));
    bits |= static_cast<uint8_t>(1 << d);
  }
  return bits;
}

// "HH:MM" as minutes after midnight; "24:00" only where `allow_end_of_day`.
absl::StatusOr<int> ParseClock(absl::string_view window, absl::string_view clock,
                               bool allow_end_of_day) {
  std::vector<absl::string_view> parts = absl::StrSplit(clock, ':');
  int hours = 0;
  int minutes = 0;
  if (parts.size() != 2 || parts[0].size() != 2 || parts[1].size() != 2 ||
      !absl::SimpleAtoi(parts[0], &hours) || !absl::SimpleAtoi(parts[1], &minutes) || hours < 0 ||
      minutes < 0 || minutes > 59 || hours > 24 ||
      (hours == 24 && (minutes != 0 || !allow_end_of_day))) {
    return WindowError(window, absl::StrCat("\"", clock, "\" is not a time of day HH:MM"));
  }
  return hours * 60 + minutes;
}

absl::StatusOr<absl::TimeZone> ParseZone(absl::string_view window, absl::string_view zone) {
  if (zone == "UTC") return absl::UTCTimeZone();
  absl::string_view offset = zone;
  int sign = 0;
  if (absl::ConsumePrefix(&offset, "UTC+")) {
    sign = 1;
  } else if (absl::ConsumePrefix(&offset, "UTC-")) {
    sign = -1;
  }
  int hours = 0;
  int minutes = 0;
  std::vector<absl::string_view> parts = absl::StrSplit(offset, ':');
  if (sign == 0 || parts.size() != 2 || parts[0].size() != 2 || parts[1].size() != 2 ||
      !absl::SimpleAtoi(parts[0], &hours) || !absl::SimpleAtoi(parts[1], &minutes) || hours < 0 ||
      hours > 14 || minutes < 0 || minutes > 59) {
    return WindowError(window, absl::StrCat("\"", zone,
                                            "\" is not a zone: UTC, UTC+HH:MM or UTC-HH:MM "
                                            "(a fixed offset, up to 14:00)"));
  }
  return absl::FixedTimeZone(sign * (hours * 3600 + minutes * 60));
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseWaves(absl::string_view text) {
  absl::string_view spec = absl::StripAsciiWhitespace(text);
  if (spec.empty()) return std::vector<int>{100};
  std::vector<int> percents;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    absl::string_view number = absl::StripAsciiWhitespace(part);
    absl::ConsumeSuffix(&number, "%");
    int percent = 0;
    if (!absl::SimpleAtoi(number, &percent)) {
      return absl::InvalidArgumentError(absl::StrCat("--waves \"", text, "\": \"", part,
                                                     "\" is not a percentage (e.g. 10%,50%,100%)"));
    }
    if (percent < 1 || percent > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat("--waves \"", text, "\": ", percent, "% is outside 1%..100%"));
    }
    if (!percents.empty() && percent <= percents.back()) {
      return absl::InvalidArgumentError(absl::StrCat("--waves \"", text, "\": ", percent,
                                                     "% is not above the wave before it (",
                                                     percents.back(), "%)"));
    }
    percents.push_back(percent);
  }
  if (percents.back() != 100) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--waves \"", text, "\": the last wave must be 100%, not ", percents.back(), "%"));
  }
  return percents;
}

absl::StatusOr<absl::Duration> ParseWatch(absl::string_view text) {
  absl::string_view spec = absl::StripAsciiWhitespace(text);
  if (spec.empty()) return absl::ZeroDuration();
  absl::Duration watch;
  if (!absl::ParseDuration(spec, &watch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--watch \"", text, "\": not a duration (e.g. 10m, 1h30m)"));
  }
  if (watch < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("--watch \"", text, "\": negative"));
  }
  if (watch > kMaxWatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("--watch \"", text, "\": longer than ", absl::FormatDuration(kMaxWatch)));
  }
  return watch;
}

absl::StatusOr<MaintenanceWindow> ParseWindow(absl::string_view text) {
  MaintenanceWindow window;
  window.spec = std::string(absl::StripAsciiWhitespace(text));
  size_t colon = window.spec.find(':');
  if (colon == std::string::npos) {
    return WindowError(text, "expected SELECTOR:DAYS HH:MM-HH:MM [ZONE]");
  }
  absl::string_view selector =
      absl::StripAsciiWhitespace(absl::string_view(window.spec).substr(0, colon));
  if (selector != "*") {
    std::pair<absl::string_view, absl::string_view> label =
        absl::StrSplit(selector, absl::MaxSplits('=', 1));
    if (label.first.empty() || label.second.empty()) {
      return WindowError(text, absl::StrCat("\"", selector, "\" is not KEY=VALUE or *"));
    }
    window.label_key = std::string(label.first);
    window.label_value = std::string(label.second);
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(window.spec).substr(colon + 1), ' ', absl::SkipWhitespace());
  if (fields.size() < 2 || fields.size() > 3) {
    return WindowError(text, "expected DAYS HH:MM-HH:MM [ZONE] after the selector");
  }
  ASSIGN_OR_RETURN(window.days, ParseDays(text, fields[0]));
  std::vector<absl::string_view> clocks = absl::StrSplit(fields[1], '-');
  if (clocks.size() != 2) {
    return WindowError(text, absl::StrCat("\"", fields[1], "\" is not HH:MM-HH:MM"));
  }
  ASSIGN_OR_RETURN(window.start_minute, ParseClock(text, clocks[0], false));
  ASSIGN_OR_RETURN(window.end_minute, ParseClock(text, clocks[1], true));
  if (window.start_minute == window.end_minute) {
    return WindowError(text, "the window opens and closes at the same time");
  }
  if (fields.size() == 3) {
    ASSIGN_OR_RETURN(window.zone, ParseZone(text, fields[2]));
  }
  return window;
}

absl::StatusOr<RolloutSpec> ParseRolloutOptions(const smbfleet::v1::RolloutOptions& options,
                                                absl::Duration ack_timeout) {
  RolloutSpec spec;
  std::set<std::string> canaries;
  for (const std::string& host : options.canary_hosts()) {
    if (host.empty()) return absl::InvalidArgumentError("--canary \"\": empty host name");
    if (!canaries.insert(host).second) {
      return absl::InvalidArgumentError(absl::StrCat("--canary \"", host, "\": named twice"));
    }
    spec.canary_hosts.push_back(host);
  }
  ASSIGN_OR_RETURN(spec.wave_percents, ParseWaves(options.waves()));
  ASSIGN_OR_RETURN(spec.watch, ParseWatch(options.watch()));
  for (const std::string& text : options.windows()) {
    ASSIGN_OR_RETURN(MaintenanceWindow window, ParseWindow(text));
    spec.windows.push_back(std::move(window));
  }
  spec.max_precondition_failed =
      static_cast<int>(std::min<uint32_t>(options.max_precondition_failed(), 1u << 30));
  if (ack_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ack timeout ", absl::FormatDuration(ack_timeout), ": must be positive"));
  }
  spec.ack_timeout = ack_timeout;
  return spec;
}

bool WindowApplies(const MaintenanceWindow& window, const Labels& labels) {
  if (window.label_key.empty()) return true;
  auto it = labels.find(window.label_key);
  return it != labels.end() && it->second == window.label_value;
}

bool WindowOpen(const MaintenanceWindow& window, absl::Time now) {
  absl::CivilMinute local = absl::ToCivilMinute(now, window.zone);
  int today = static_cast<int>(absl::GetWeekday(absl::CivilDay(local)));  // Monday = 0
  int yesterday = (today + 6) % 7;
  int minute = local.hour() * 60 + local.minute();
  auto opens_on = [&](int day) { return (window.days & (1 << day)) != 0; };
  if (window.end_minute > window.start_minute) {
    return opens_on(today) && minute >= window.start_minute && minute < window.end_minute;
  }
  // Crosses midnight: the evening part today, or the morning part of yesterday's window.
  return (opens_on(today) && minute >= window.start_minute) ||
         (opens_on(yesterday) && minute < window.end_minute);
}

bool InsideWindows(const std::vector<MaintenanceWindow>& windows, const Labels& labels,
                   absl::Time now) {
  for (const MaintenanceWindow& window : windows) {
    if (WindowApplies(window, labels) && !WindowOpen(window, now)) return false;
  }
  return true;
}

absl::StatusOr<std::vector<std::vector<std::string>>> AssignWaves(
    const std::vector<std::string>& hosts, const RolloutSpec& spec) {
  if (hosts.empty()) return absl::InvalidArgumentError("a rollout needs at least one host");
  if (spec.wave_percents.empty() || spec.wave_percents.back() != 100) {
    return absl::InvalidArgumentError("waves: the last wave must be 100%");
  }
  std::set<std::string> all;
  for (const std::string& host : hosts) {
    if (!all.insert(host).second) {
      return absl::InvalidArgumentError(absl::StrCat("host \"", host, "\" is listed twice"));
    }
  }
  std::vector<std::vector<std::string>> waves;
  std::set<std::string> canaries;
  for (const std::string& canary : spec.canary_hosts) {
    if (all.count(canary) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--canary \"", canary, "\": not one of the change's hosts"));
    }
    if (!canaries.insert(canary).second) {
      return absl::InvalidArgumentError(absl::StrCat("--canary \"", canary, "\": named twice"));
    }
  }
  if (!spec.canary_hosts.empty()) waves.push_back(spec.canary_hosts);

  std::vector<std::string> rest;
  for (const std::string& host : all) {  // std::set: sorted by name
    if (canaries.count(host) == 0) rest.push_back(host);
  }
  size_t taken = 0;
  for (int percent : spec.wave_percents) {
    size_t upto = (static_cast<size_t>(percent) * rest.size() + 99) / 100;
    if (percent >= 100) upto = rest.size();
    if (upto <= taken) continue;
    waves.emplace_back(rest.begin() + static_cast<std::ptrdiff_t>(taken),
                       rest.begin() + static_cast<std::ptrdiff_t>(upto));
    taken = upto;
  }
  return waves;
}

}  // namespace smbfleet::collector::changes
