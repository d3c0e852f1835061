#include "collector/changes/rollout_spec.h"

#include <algorithm>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// 2026-12-05 is a Saturday.
absl::Time Utc(int day, int hour, int minute) {
  return absl::FromCivil(absl::CivilMinute(2026, 12, day, hour, minute), absl::UTCTimeZone());
}

TEST(ParseWavesTest, AcceptsIncreasingPercentagesEndingAt100) {
  struct Case {
    std::string text;
    std::vector<int> want;
  };
  for (const Case& c : std::vector<Case>{{"", {100}},
                                         {"100%", {100}},
                                         {"10%,50%,100%", {10, 50, 100}},
                                         {" 25 , 100 ", {25, 100}},
                                         {"1%,2%,100%", {1, 2, 100}}}) {
    absl::StatusOr<std::vector<int>> got = ParseWaves(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseWavesTest, ErrorsNameTheFlagAndTheValue) {
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"10%,5%,100%", "--waves \"10%,5%,100%\": 5% is not above the wave before it (10%)"},
           {"10%,10%,100%", "10% is not above the wave before it (10%)"},
           {"10%,50%", "--waves \"10%,50%\": the last wave must be 100%, not 50%"},
           {"0%,100%", "0% is outside 1%..100%"},
           {"150%", "150% is outside 1%..100%"},
           {"10%,x,100%", "\"x\" is not a percentage (e.g. 10%,50%,100%)"},
           {"10%,,100%", "\"\" is not a percentage"},
       }) {
    absl::StatusOr<std::vector<int>> got = ParseWaves(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want));
  }
}

TEST(ParseWatchTest, DurationsAndErrors) {
  EXPECT_EQ(*ParseWatch(""), absl::ZeroDuration());
  EXPECT_EQ(*ParseWatch("0"), absl::ZeroDuration());
  EXPECT_EQ(*ParseWatch("10m"), absl::Minutes(10));
  EXPECT_EQ(*ParseWatch("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseWatch("168h"), kMaxWatch);
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"ten", "--watch \"ten\": not a duration (e.g. 10m, 1h30m)"},
           {"10", "--watch \"10\": not a duration"},
           {"-5m", "--watch \"-5m\": negative"},
           {"169h", "--watch \"169h\": longer than 168h"},
           {"inf", "--watch \"inf\": longer than"},
       }) {
    absl::StatusOr<absl::Duration> got = ParseWatch(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want));
  }
}

TEST(ParseWindowTest, ParsesSelectorDaysTimesAndZone) {
  absl::StatusOr<MaintenanceWindow> w = ParseWindow("site=ams:Sat 22:00-06:00 UTC+01:00");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->spec, "site=ams:Sat 22:00-06:00 UTC+01:00");
  EXPECT_EQ(w->label_key, "site");
  EXPECT_EQ(w->label_value, "ams");
  EXPECT_EQ(w->days, 1 << 5);
  EXPECT_EQ(w->start_minute, 22 * 60);
  EXPECT_EQ(w->end_minute, 6 * 60);
  EXPECT_EQ(w->zone, absl::FixedTimeZone(3600));

  w = ParseWindow("*:Mon-Fri 09:00-24:00");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->label_key, "");
  EXPECT_EQ(w->days, 0x1f);
  EXPECT_EQ(w->end_minute, 1440);
  EXPECT_EQ(w->zone, absl::UTCTimeZone());

  w = ParseWindow("env=prod:fri-mon 20:00-23:00 UTC-05:30");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->days, (1 << 4) | (1 << 5) | (1 << 6) | (1 << 0));
  EXPECT_EQ(w->zone, absl::FixedTimeZone(-(5 * 3600 + 30 * 60)));
}

TEST(ParseWindowTest, ErrorsNameTheFlagValueAndProblem) {
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"site=ams", "expected SELECTOR:DAYS HH:MM-HH:MM [ZONE]"},
           {"=ams:Sat 22:00-06:00", "\"=ams\" is not KEY=VALUE or *"},
           {"site=:Sat 22:00-06:00", "\"site=\" is not KEY=VALUE or *"},
           {"site=ams:Sat", "expected DAYS HH:MM-HH:MM [ZONE] after the selector"},
           {"site=ams:Sat 22:00-06:00 UTC extra", "expected DAYS HH:MM-HH:MM [ZONE]"},
           {"site=ams:Sa 22:00-06:00", "\"Sa\" is not a day (Mon ... Sun, or daily)"},
           {"site=ams:Mon-Wed-Fri 22:00-06:00", "bad day range \"Mon-Wed-Fri\""},
           {"site=ams:Sat 22:00", "\"22:00\" is not HH:MM-HH:MM"},
           {"site=ams:Sat 25:00-06:00", "\"25:00\" is not a time of day HH:MM"},
           {"site=ams:Sat 24:00-06:00", "\"24:00\" is not a time of day HH:MM"},
           {"site=ams:Sat 22:60-06:00", "\"22:60\" is not a time of day HH:MM"},
           {"site=ams:Sat 9:00-10:00", "\"9:00\" is not a time of day HH:MM"},
           {"site=ams:Sat 22:00-22:00", "opens and closes at the same time"},
           {"site=ams:Sat 22:00-06:00 CET", "\"CET\" is not a zone: UTC, UTC+HH:MM or UTC-HH:MM"},
           {"site=ams:Sat 22:00-06:00 UTC+15:00", "\"UTC+15:00\" is not a zone"},
       }) {
    absl::StatusOr<MaintenanceWindow> got = ParseWindow(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    std::string message(got.status().message());
    EXPECT_THAT(message, StartsWith("--window \"" + c.text + "\": ")) << message;
    EXPECT_THAT(message, HasSubstr(c.want)) << message;
  }
}

TEST(WindowOpenTest, InsideAndOutsideInLocalTime) {
  struct Case {
    std::string window;
    absl::Time now;
    bool open;
  };
  for (const Case& c : std::vector<Case>{
           // Saturday night into Sunday morning, UTC.
           {"a=b:Sat 22:00-06:00", Utc(5, 21, 59), false},
           {"a=b:Sat 22:00-06:00", Utc(5, 22, 0), true},
           {"a=b:Sat 22:00-06:00", Utc(6, 5, 59), true},
           {"a=b:Sat 22:00-06:00", Utc(6, 6, 0), false},
           {"a=b:Sat 22:00-06:00", Utc(6, 22, 30), false},  // Sunday night: not a Saturday
           {"a=b:Sat 22:00-06:00", Utc(4, 23, 0), false},   // Friday
           // The same window in UTC+1: an hour earlier in UTC.
           {"a=b:Sat 22:00-06:00 UTC+01:00", Utc(5, 20, 59), false},
           {"a=b:Sat 22:00-06:00 UTC+01:00", Utc(5, 21, 0), true},
           {"a=b:Sat 22:00-06:00 UTC+01:00", Utc(6, 4, 59), true},
           {"a=b:Sat 22:00-06:00 UTC+01:00", Utc(6, 5, 0), false},
           // Office hours in UTC-5: local Monday 09:00 is 14:00 UTC.
           {"a=b:Mon-Fri 09:00-17:00 UTC-05:00", Utc(7, 13, 59), false},
           {"a=b:Mon-Fri 09:00-17:00 UTC-05:00", Utc(7, 14, 0), true},
           {"a=b:Mon-Fri 09:00-17:00 UTC-05:00", Utc(7, 21, 59), true},
           {"a=b:Mon-Fri 09:00-17:00 UTC-05:00", Utc(5, 15, 0), false},  // Saturday
           // A local day that differs from the UTC day: Sunday 23:30 UTC is Monday in UTC+2.
           {"a=b:Mon 00:00-02:00 UTC+02:00", Utc(6, 23, 30), true},
           // Sunday's window runs into Monday (the weekday index wraps).
           {"a=b:Sun 23:00-01:00", Utc(7, 0, 30), true},
           {"a=b:Sun 23:00-01:00", Utc(7, 1, 0), false},
           {"a=b:Fri-Mon 20:00-23:00", Utc(6, 21, 0), true},
           {"a=b:Fri-Mon 20:00-23:00", Utc(2, 21, 0), false},  // Wednesday
           {"a=b:Sat,Sun 00:00-02:00", Utc(6, 1, 0), true},
           {"a=b:Sat,Sun 00:00-02:00", Utc(7, 1, 0), false},
           // Ends at midnight.
           {"a=b:Sat 22:00-00:00", Utc(5, 23, 59), true},
           {"a=b:Sat 22:00-00:00", Utc(6, 0, 0), false},
           {"*:daily 00:00-24:00", Utc(3, 12, 0), true},
       }) {
    absl::StatusOr<MaintenanceWindow> w = ParseWindow(c.window);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(WindowOpen(*w, c.now), c.open)
        << c.window << " at " << absl::FormatTime(c.now, absl::UTCTimeZone());
  }
}

TEST(WindowOpenTest, EveryMatchingWindowMustBeOpen) {
  std::vector<MaintenanceWindow> windows = {*ParseWindow("site=ams:Sat 22:00-06:00"),
                                            *ParseWindow("role=db:daily 23:00-24:00")};
  Labels ams = {{"site", "ams"}};
  Labels ams_db = {{"site", "ams"}, {"role", "db"}};
  Labels nyc = {{"site", "nyc"}};
  EXPECT_FALSE(InsideWindows(windows, ams, Utc(5, 12, 0)));
  EXPECT_TRUE(InsideWindows(windows, ams, Utc(5, 22, 30)));
  EXPECT_FALSE(InsideWindows(windows, ams_db, Utc(5, 22, 30)));  // db window closed
  EXPECT_TRUE(InsideWindows(windows, ams_db, Utc(5, 23, 30)));
  EXPECT_TRUE(InsideWindows(windows, nyc, Utc(5, 12, 0)));  // no window for nyc
  EXPECT_TRUE(InsideWindows({}, ams, Utc(5, 12, 0)));
}

TEST(ParseRolloutOptionsTest, ParsesEveryField) {
  smbfleet::v1::RolloutOptions options;
  options.add_canary_hosts("fs2");
  options.set_waves("50%,100%");
  options.set_watch("10m");
  options.add_windows("site=ams:Sat 22:00-06:00");
  options.set_max_precondition_failed(2);
  absl::StatusOr<RolloutSpec> spec = ParseRolloutOptions(options, absl::Minutes(30));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->canary_hosts, ElementsAre("fs2"));
  EXPECT_THAT(spec->wave_percents, ElementsAre(50, 100));
  EXPECT_EQ(spec->watch, absl::Minutes(10));
  ASSERT_EQ(spec->windows.size(), 1u);
  EXPECT_EQ(spec->windows[0].label_value, "ams");
  EXPECT_EQ(spec->max_precondition_failed, 2);
  EXPECT_EQ(spec->ack_timeout, absl::Minutes(30));

  absl::StatusOr<RolloutSpec> defaults = ParseRolloutOptions({}, absl::Hours(1));
  ASSERT_TRUE(defaults.ok());
  EXPECT_THAT(defaults->wave_percents, ElementsAre(100));
  EXPECT_EQ(defaults->watch, absl::ZeroDuration());
  EXPECT_EQ(defaults->max_precondition_failed, 0);
}

TEST(ParseRolloutOptionsTest, RefusesBadFields) {
  smbfleet::v1::RolloutOptions twice;
  twice.add_canary_hosts("fs1");
  twice.add_canary_hosts("fs1");
  EXPECT_EQ(ParseRolloutOptions(twice, absl::Hours(1)).status().message(),
            "--canary \"fs1\": named twice");
  smbfleet::v1::RolloutOptions bad_window;
  bad_window.add_windows("nope");
  EXPECT_THAT(std::string(ParseRolloutOptions(bad_window, absl::Hours(1)).status().message()),
              StartsWith("--window \"nope\""));
  EXPECT_THAT(std::string(ParseRolloutOptions({}, absl::ZeroDuration()).status().message()),
              HasSubstr("must be positive"));
}

RolloutSpec Spec(std::vector<std::string> canaries, std::vector<int> percents) {
  RolloutSpec spec;
  spec.canary_hosts = std::move(canaries);
  spec.wave_percents = std::move(percents);
  return spec;
}

TEST(AssignWavesTest, CanariesFirstThenPercentagesOfTheRestByName) {
  using Waves = std::vector<std::vector<std::string>>;
  struct Case {
    std::string name;
    std::vector<std::string> hosts;
    RolloutSpec spec;
    Waves want;
  };
  std::vector<std::string> ten = {"h07", "h03", "h00", "h09", "h05",
                                  "h01", "h08", "h02", "h06", "h04"};
  for (const Case& c : std::vector<Case>{
           {"canary, then 10/50/100% of the other nine: 1, 5, 9 hosts cumulative (rounded up)",
            ten,
            Spec({"h05"}, {10, 50, 100}),
            {{"h05"}, {"h00"}, {"h01", "h02", "h03", "h04"}, {"h06", "h07", "h08", "h09"}}},
           {"one host: the small percentages add no wave", {"a"}, Spec({}, {10, 50, 100}), {{"a"}}},
           {"three hosts, three waves",
            {"c", "b", "a"},
            Spec({}, {10, 50, 100}),
            {{"a"}, {"b"}, {"c"}}},
           {"canaries keep their order",
            {"a", "b", "c"},
            Spec({"c", "a"}, {100}),
            {{"c", "a"}, {"b"}}},
           {"every host a canary", {"a", "b"}, Spec({"b", "a"}, {50, 100}), {{"b", "a"}}},
           {"one wave", {"b", "a"}, Spec({}, {100}), {{"a", "b"}}},
       }) {
    absl::StatusOr<Waves> got = AssignWaves(c.hosts, c.spec);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

TEST(AssignWavesTest, EveryHostExactlyOnceAndNoEmptyWave) {
  for (int n = 1; n <= 40; ++n) {
    std::vector<std::string> hosts;
    for (int i = n - 1; i >= 0; --i) hosts.push_back("host" + std::to_string(i));
    for (const RolloutSpec& spec :
         {Spec({}, {100}), Spec({}, {1, 2, 3, 100}), Spec({"host0"}, {10, 50, 100}),
          Spec({}, {33, 66, 99, 100}), Spec({"host0"}, {100})}) {
      absl::StatusOr<std::vector<std::vector<std::string>>> waves = AssignWaves(hosts, spec);
      ASSERT_TRUE(waves.ok()) << waves.status();
      std::multiset<std::string> seen;
      for (const auto& wave : *waves) {
        EXPECT_FALSE(wave.empty()) << "n=" << n;
        seen.insert(wave.begin(), wave.end());
      }
      EXPECT_EQ(seen, std::multiset<std::string>(hosts.begin(), hosts.end())) << "n=" << n;
      // The same input in another order gives the same waves.
      std::vector<std::string> reversed(hosts.rbegin(), hosts.rend());
      EXPECT_EQ(*AssignWaves(reversed, spec), *waves) << "n=" << n;
    }
  }
}

TEST(AssignWavesTest, RefusesUnknownCanaryDuplicatesAndNoHosts) {
  EXPECT_EQ(AssignWaves({"a", "b"}, Spec({"z"}, {100})).status().message(),
            "--canary \"z\": not one of the change's hosts");
  EXPECT_EQ(AssignWaves({"a", "b"}, Spec({"a", "a"}, {100})).status().message(),
            "--canary \"a\": named twice");
  EXPECT_EQ(AssignWaves({"a", "a"}, Spec({}, {100})).status().message(),
            "host \"a\" is listed twice");
  EXPECT_EQ(AssignWaves({}, Spec({}, {100})).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AssignWaves({"a"}, Spec({}, {50})).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smbfleet::collector::changes
