#ifndef SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_SPEC_H_
#define SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_SPEC_H_

// The rollout an approval carries, parsed from what the approver typed (v1::RolloutOptions):
// waves, watch period, maintenance windows and halt thresholds; and the split of a change's
// hosts into waves. Pure: errors name the flag and the value that is wrong.
//
// Maintenance window grammar (one --window flag per label):
//
//   WINDOW := SELECTOR ":" DAYS " " HH:MM "-" HH:MM [" " ZONE]
//   SELECTOR := KEY "=" VALUE        hosts carrying that label
//             | "*"                  every host
//   DAYS   := DAY ("," DAY)* | DAY "-" DAY | "daily"      DAY := Mon Tue Wed Thu Fri Sat Sun
//   ZONE   := "UTC" | "UTC+HH:MM" | "UTC-HH:MM"           default UTC
//
//   site=ams:Sat 22:00-06:00 UTC+01:00    opens Saturday 22:00, closes Sunday 06:00 (UTC+1)
//   role=file:Mon-Fri 19:00-23:30         weekdays, UTC
//   *:daily 00:00-24:00                   always open (the same as no window)
//
// DAYS name the day on which the window opens; an end at or before the start is on the next
// day. The zone is a fixed offset, written by the approver for the hosts' local time: it does
// not follow daylight saving time, so that a window means exactly what it says (and needs no
// time-zone database). A host must be inside every window whose selector matches it; a host
// that no window matches may be dispatched at any time.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "smbfleet/v1/change.pb.h"

namespace smbfleet::collector::changes {

using Labels = std::map<std::string, std::string>;

struct MaintenanceWindow {
  std::string spec;       // as written, for messages and display
  std::string label_key;  // empty = every host ("*")
  std::string label_value;
  uint8_t days = 0;      // bit d: opens on weekday d (0 = Monday ... 6 = Sunday)
  int start_minute = 0;  // minutes after local midnight, [0, 1440)
  int end_minute = 0;    // (0, 1440]; at or before start_minute = the next day
  absl::TimeZone zone = absl::UTCTimeZone();
};

// The limits an approver may not exceed; the collector's configuration sets the ack timeout.
inline constexpr absl::Duration kMaxWatch = absl::Hours(7 * 24);

struct RolloutSpec {
  std::vector<std::string> canary_hosts;   // the first wave, when not empty
  std::vector<int> wave_percents = {100};  // of the other hosts; strictly increasing, last 100
  absl::Duration watch = absl::ZeroDuration();
  std::vector<MaintenanceWindow> windows;
  int max_precondition_failed = 0;  // halt when more hosts than this ack PRECONDITION_FAILED
  // An order's lifetime: a host that has not acked by then is TIMED_OUT, and the order's
  // not-after time makes sure the agent does not apply it later.
  absl::Duration ack_timeout = absl::Hours(1);
};

// "10%,50%,100%" -> {10, 50, 100}; empty -> {100}.
absl::StatusOr<std::vector<int>> ParseWaves(absl::string_view text);
// "10m", "1h30m"; empty -> zero. Not negative, at most kMaxWatch.
absl::StatusOr<absl::Duration> ParseWatch(absl::string_view text);
// One --window value (grammar above).
absl::StatusOr<MaintenanceWindow> ParseWindow(absl::string_view text);
// Every field of `options`; `ack_timeout` comes from the collector's configuration.
absl::StatusOr<RolloutSpec> ParseRolloutOptions(const smbfleet::v1::RolloutOptions& options,
                                                absl::Duration ack_timeout);

// Whether the window's selector matches a host with these labels.
bool WindowApplies(const MaintenanceWindow& window, const Labels& labels);
bool WindowOpen(const MaintenanceWindow& window, absl::Time now);
// Whether every window that applies to the host is open at `now`.
bool InsideWindows(const std::vector<MaintenanceWindow>& windows, const Labels& labels,
                   absl::Time now);

// Splits `hosts` into waves: the canaries first (in their order), then each percentage of the
// others (sorted by name), cumulative and rounded up. Every host lands in exactly one wave and
// no wave is empty (a percentage that adds no host adds no wave). InvalidArgument for a canary
// that is not one of `hosts`, a duplicate, or no hosts at all.
absl::StatusOr<std::vector<std::vector<std::string>>> AssignWaves(
    const std::vector<std::string>& hosts, const RolloutSpec& spec);

}  // namespace smbfleet::collector::changes

#endif  // SMBFLEET_COLLECTOR_CHANGES_ROLLOUT_SPEC_H_
