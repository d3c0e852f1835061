#include "collector/changes/rollout.h"

#include <functional>
#include <utility>

#include "collector/changes/approval.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

using smbfleet::v1::ChangeState;
using smbfleet::v1::HostChangeState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr HostChangeState kPending = smbfleet::v1::HOST_CHANGE_STATE_PENDING;
constexpr HostChangeState kDispatched = smbfleet::v1::HOST_CHANGE_STATE_DISPATCHED;
constexpr HostChangeState kApplied = smbfleet::v1::HOST_CHANGE_STATE_APPLIED;
constexpr HostChangeState kFailed = smbfleet::v1::HOST_CHANGE_STATE_FAILED;
constexpr HostChangeState kPreconditionFailed = smbfleet::v1::HOST_CHANGE_STATE_PRECONDITION_FAILED;
constexpr HostChangeState kRefused = smbfleet::v1::HOST_CHANGE_STATE_REFUSED;
constexpr HostChangeState kRolledBack = smbfleet::v1::HOST_CHANGE_STATE_ROLLED_BACK;
constexpr HostChangeState kTimedOut = smbfleet::v1::HOST_CHANGE_STATE_TIMED_OUT;

// The fake clock: Saturday 2026-12-05 12:00 UTC, plus minutes.
const absl::Time kT0 = absl::FromCivil(absl::CivilMinute(2026, 12, 5, 12, 0), absl::UTCTimeZone());
absl::Time At(int minutes) { return kT0 + absl::Minutes(minutes); }

HostRollout Host(std::string name, Labels labels = {}) {
  HostRollout host;
  host.host = std::move(name);
  host.labels = std::move(labels);
  return host;
}

RolloutSpec Spec(std::vector<std::string> canaries, std::vector<int> waves, int watch_minutes) {
  RolloutSpec spec;
  spec.canary_hosts = std::move(canaries);
  spec.wave_percents = std::move(waves);
  spec.watch = absl::Minutes(watch_minutes);
  spec.ack_timeout = absl::Minutes(30);
  return spec;
}

// Drives one rollout through events, keeping the latest state and the last step's actions.
class Driver {
 public:
  explicit Driver(Rollout rollout) : rollout_(std::move(rollout)) {}

  // Steps and expects success.
  const std::vector<Action>& Do(const Event& event, absl::Time now) {
    absl::StatusOr<Transition> t = Step(rollout_, event, now);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) {
      rollout_ = std::move(t->rollout);
      actions_ = std::move(t->actions);
    } else {
      actions_.clear();
    }
    return actions_;
  }
  absl::Status Try(const Event& event, absl::Time now) {
    absl::StatusOr<Transition> t = Step(rollout_, event, now);
    if (t.ok()) rollout_ = std::move(t->rollout);
    return t.status();
  }

  const Rollout& rollout() const { return rollout_; }
  ChangeState state() const { return rollout_.state; }
  HostChangeState host(const std::string& name) const {
    for (const HostRollout& h : rollout_.hosts) {
      if (h.host == name) return h.state;
    }
    ADD_FAILURE() << "no host " << name;
    return smbfleet::v1::HOST_CHANGE_STATE_UNSPECIFIED;
  }

 private:
  Rollout rollout_;
  std::vector<Action> actions_;
};

Driver Approved(std::vector<HostRollout> hosts, const RolloutSpec& spec, absl::Time now = kT0,
                absl::Time not_after = absl::InfiniteFuture()) {
  Driver d(NewRollout("c-7", std::move(hosts), not_after));
  d.Do(Event::Approve(spec), now);
  return d;
}

// The hosts dispatched by `actions`, in order.
std::vector<std::string> Dispatched(const std::vector<Action>& actions) {
  std::vector<std::string> hosts;
  for (const Action& a : actions) {
    if (a.kind == Action::Kind::kDispatch)
      hosts.insert(hosts.end(), a.hosts.begin(), a.hosts.end());
  }
  return hosts;
}

std::vector<std::string> RolledBack(const std::vector<Action>& actions) {
  std::vector<std::string> hosts;
  for (const Action& a : actions) {
    if (a.kind == Action::Kind::kSendRollback)
      hosts.insert(hosts.end(), a.hosts.begin(), a.hosts.end());
  }
  return hosts;
}

bool Has(const std::vector<Action>& actions, Action::Kind kind) {
  for (const Action& a : actions) {
    if (a.kind == kind) return true;
  }
  return false;
}

TEST(RolloutTest, ApproveDispatchesTheFirstWaveOnly) {
  Driver d =
      Approved({Host("fs1"), Host("fs2"), Host("fs3"), Host("fs4")}, Spec({"fs3"}, {50, 100}, 10));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_ROLLING_OUT);
  EXPECT_EQ(d.rollout().wave_count, 3);  // [fs3] [fs1 fs2] [fs4]
  EXPECT_EQ(d.host("fs3"), kDispatched);
  EXPECT_EQ(d.host("fs1"), kPending);
  absl::StatusOr<Transition> again = Step(d.rollout(), Event::Tick(), At(1));
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(again->actions, IsEmpty());  // nothing is dispatched twice
}

TEST(RolloutTest, TheDispatchActionCarriesWaveAndNotAfter) {
  Driver d(NewRollout("c-7", {Host("fs1"), Host("fs2")}, At(20)));
  const std::vector<Action>& actions = d.Do(Event::Approve(Spec({"fs2"}, {100}, 0)), kT0);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, Action::Kind::kDispatch);
  EXPECT_THAT(actions[0].hosts, ElementsAre("fs2"));
  EXPECT_EQ(actions[0].wave, 0);
  EXPECT_EQ(actions[0].not_after, At(20));  // the change expires before the ack timeout
  d.Do(Event::Ack("fs2", kApplied), At(5));
  EXPECT_EQ(d.rollout().wave, 1);
}

TEST(RolloutTest, TheNextWaveWaitsForEveryAckAndTheWatchPeriod) {
  Driver d =
      Approved({Host("fs1"), Host("fs2"), Host("fs3"), Host("fs4")}, Spec({"fs3"}, {50, 100}, 10));
  EXPECT_THAT(Dispatched(d.Do(Event::Ack("fs3", kApplied), At(5))), IsEmpty());
  EXPECT_EQ(NextDeadline(d.rollout()), At(15));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(15) - absl::Seconds(1))), IsEmpty());
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(15))), ElementsAre("fs1", "fs2"));
  EXPECT_EQ(NextDeadline(d.rollout()), At(45));  // their ack timeout

  d.Do(Event::Ack("fs1", kApplied), At(20));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(21))), IsEmpty());  // fs2 has not acked
  d.Do(Event::Ack("fs2", kApplied), At(22));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(31))), IsEmpty());  // watching until 32
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(32))), ElementsAre("fs4"));

  d.Do(Event::Ack("fs4", kApplied), At(33));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_ROLLING_OUT);  // the last wave is watched too
  EXPECT_TRUE(Has(d.Do(Event::Tick(), At(43)), Action::Kind::kComplete));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_COMPLETED);
  EXPECT_EQ(NextDeadline(d.rollout()), absl::InfiniteFuture());
  EXPECT_THAT(d.Do(Event::Tick(), At(100)), IsEmpty());
}

TEST(RolloutTest, WithoutWatchPeriodTheLastAckStartsTheNextWave) {
  Driver d = Approved({Host("a"), Host("b"), Host("c")}, Spec({}, {33, 100}, 0));
  EXPECT_EQ(d.host("a"), kDispatched);
  EXPECT_THAT(Dispatched(d.Do(Event::Ack("a", kApplied), At(1))), ElementsAre("b", "c"));
  d.Do(Event::Ack("b", kApplied), At(2));
  EXPECT_TRUE(Has(d.Do(Event::Ack("c", kApplied), At(3)), Action::Kind::kComplete));
}

TEST(RolloutTest, AHostThatDoesNotAckTimesOutAndTheRolloutGoesOn) {
  Driver d = Approved({Host("a"), Host("b")}, Spec({"a"}, {100}, 0));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(29))), IsEmpty());
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(31))), ElementsAre("b"));
  EXPECT_EQ(d.host("a"), kTimedOut);
  EXPECT_THAT(d.rollout().hosts[0].message, HasSubstr("no ack within 30m"));
  // The ack that arrives after all is recorded: rollback needs to know the host applied.
  d.Do(Event::Ack("a", kApplied, "late"), At(40));
  EXPECT_EQ(d.host("a"), kApplied);
}

TEST(RolloutTest, HostsAreDispatchedOnlyInsideTheirMaintenanceWindow) {
  RolloutSpec spec = Spec({}, {100}, 0);
  spec.windows = {*ParseWindow("site=ams:Sat 22:00-06:00")};
  Driver d = Approved({Host("ams1", {{"site", "ams"}}), Host("nyc1", {{"site", "nyc"}})}, spec);
  EXPECT_EQ(d.host("nyc1"), kDispatched);  // no window for nyc
  EXPECT_EQ(d.host("ams1"), kPending);
  d.Do(Event::Ack("nyc1", kApplied), At(5));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(10 * 60 - 1))), IsEmpty());  // 21:59
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(10 * 60))), ElementsAre("ams1"));
}

TEST(RolloutTest, AnApprovedChangeWaitsForTheFirstWindow) {
  RolloutSpec spec = Spec({}, {100}, 0);
  spec.windows = {*ParseWindow("*:Sat 22:00-06:00 UTC+01:00")};
  Driver d = Approved({Host("fs1")}, spec);
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_APPROVED);
  // 21:00 UTC is 22:00 in UTC+1.
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(9 * 60 - 1))), IsEmpty());
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(9 * 60))), ElementsAre("fs1"));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_ROLLING_OUT);
}

// Each case: three hosts, canary "a" then "b" and "c"; the events after approval at kT0.
struct HaltCase {
  std::string name;
  int max_precondition_failed;
  std::vector<std::pair<Event, int>> events;  // event, at minute
  bool halted;
  std::string reason;  // part of the halt reason
};

Event Refusal(std::string host, std::string client, int minute) {
  return Event::RefusalSeen(std::move(host), std::move(client), At(minute));
}

TEST(RolloutTest, HaltConditions) {
  const std::vector<HaltCase> cases = {
      {"a FAILED ack",
       0,
       {{Event::Ack("a", kFailed, "testparm rejected the include"), 1}},
       true,
       "host a acked FAILED: testparm rejected the include"},
      {"a ROLLED_BACK ack",
       0,
       {{Event::Ack("a", kRolledBack), 1}},
       true,
       "host a acked ROLLED_BACK"},
      {"one PRECONDITION_FAILED over none allowed",
       0,
       {{Event::Ack("a", kPreconditionFailed, "requireSigning is true"), 1}},
       true,
       "1 hosts acked PRECONDITION_FAILED, more than the 0 allowed (last: host a: requireSigning "
       "is true)"},
      {"one PRECONDITION_FAILED within the allowance",
       1,
       {{Event::Ack("a", kPreconditionFailed), 1}, {Event::Tick(), 12}},
       false,
       ""},
      {"two PRECONDITION_FAILED over one allowed",
       1,
       {{Event::Ack("a", kPreconditionFailed), 1},
        {Event::Tick(), 12},
        {Event::Ack("b", kPreconditionFailed), 13}},
       true,
       "2 hosts acked PRECONDITION_FAILED, more than the 1 allowed"},
      {"REFUSED (enforcement off) does not halt", 0, {{Event::Ack("a", kRefused), 1}}, false, ""},
      {"a refusal during the watch period",
       0,
       {{Event::Ack("a", kApplied), 1}, {Refusal("a", "10.0.0.9", 5), 6}},
       true,
       "host a refused client 10.0.0.9 at 2026-12-05T12:05:00+00:00 during wave 1 of 2"},
      {"a refusal of a client the impact named",
       0,
       {{Event::Ack("a", kApplied), 1}, {Refusal("a", "legacy-scanner", 5), 6}},
       false,
       ""},
      {"a refusal from before the apply",
       0,
       {{Event::Ack("a", kApplied), 3}, {Refusal("a", "10.0.0.9", 2), 4}},
       false,
       ""},
      {"a refusal after the watch period",
       0,
       {{Event::Ack("a", kApplied), 1}, {Refusal("a", "10.0.0.9", 11), 11}},
       false,
       ""},
      {"a refusal from a host not dispatched yet",
       0,
       {{Refusal("b", "10.0.0.9", 1), 1}},
       false,
       ""},
      {"a refusal from a host that has not acked",
       0,
       {{Refusal("a", "10.0.0.9", 1), 1}},
       false,
       ""},
  };
  for (const HaltCase& c : cases) {
    RolloutSpec spec = Spec({"a"}, {100}, 10);
    spec.max_precondition_failed = c.max_precondition_failed;
    std::vector<HostRollout> hosts = {Host("a"), Host("b"), Host("c")};
    hosts[0].expected_refusals = {"legacy-scanner"};
    Driver d = Approved(hosts, spec);
    std::vector<Action> halts;
    for (const auto& [event, minute] : c.events) {
      for (const Action& a : d.Do(event, At(minute))) {
        if (a.kind == Action::Kind::kHalt) halts.push_back(a);
      }
    }
    EXPECT_EQ(d.state() == smbfleet::v1::CHANGE_STATE_HALTED, c.halted) << c.name;
    if (!c.halted) {
      EXPECT_THAT(halts, IsEmpty()) << c.name;
      continue;
    }
    ASSERT_EQ(halts.size(), 1u) << c.name;
    EXPECT_THAT(halts[0].reason, HasSubstr(c.reason)) << c.name;
    EXPECT_EQ(d.rollout().halt_reason, halts[0].reason) << c.name;
    // Halted: time passes and no other host is ever dispatched.
    EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(24 * 60))), IsEmpty()) << c.name;
  }
}

TEST(RolloutTest, AFailedFirstWaveNeverDispatchesTheSecond) {
  Driver d = Approved({Host("canary"), Host("fs2")}, Spec({"canary"}, {100}, 0));
  EXPECT_TRUE(Has(d.Do(Event::Ack("canary", kFailed), At(1)), Action::Kind::kHalt));
  for (int minute : {2, 60, 600}) {
    EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(minute))), IsEmpty());
  }
  EXPECT_EQ(d.host("fs2"), kPending);
}

TEST(RolloutTest, HaltedRolloutsStillRecordAcksAndTimeouts) {
  Driver d = Approved({Host("a"), Host("b"), Host("c")}, Spec({}, {100}, 0));
  d.Do(Event::Halt("ann: looking at the helpdesk queue"), At(1));
  EXPECT_EQ(d.rollout().halt_reason, "ann: looking at the helpdesk queue");
  d.Do(Event::Ack("a", kApplied), At(2));
  d.Do(Event::Ack("b", kFailed), At(3));  // already halted: no second halt
  EXPECT_EQ(d.rollout().halt_reason, "ann: looking at the helpdesk queue");
  d.Do(Event::Tick(), At(31));
  EXPECT_EQ(d.host("a"), kApplied);
  EXPECT_EQ(d.host("b"), kFailed);
  EXPECT_EQ(d.host("c"), kTimedOut);
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_HALTED);
}

TEST(RolloutTest, ResumeContinuesAndWatchesAgain) {
  Driver d = Approved({Host("a"), Host("b")}, Spec({"a"}, {100}, 10));
  d.Do(Event::Ack("a", kApplied), At(1));
  d.Do(Event::Halt("ann: checking"), At(2));
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(60))), IsEmpty());
  EXPECT_THAT(d.Do(Event::Resume(), At(60)), IsEmpty());  // the watch restarts at the resume
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_ROLLING_OUT);
  EXPECT_THAT(d.rollout().halt_reason, IsEmpty());
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(69))), IsEmpty());
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(70))), ElementsAre("b"));
}

TEST(RolloutTest, ResumeForgivesThePreconditionFailuresItSaw) {
  RolloutSpec spec = Spec({}, {100}, 0);
  spec.max_precondition_failed = 1;
  Driver d = Approved({Host("a"), Host("b"), Host("c"), Host("d")}, spec);
  EXPECT_FALSE(Has(d.Do(Event::Ack("a", kPreconditionFailed), At(1)), Action::Kind::kHalt));
  EXPECT_TRUE(Has(d.Do(Event::Ack("b", kPreconditionFailed), At(2)), Action::Kind::kHalt));
  d.Do(Event::Resume(), At(3));
  // Counted since the resume: one more is within the allowance, the second is not.
  EXPECT_FALSE(Has(d.Do(Event::Ack("c", kPreconditionFailed), At(4)), Action::Kind::kHalt));
  EXPECT_TRUE(Has(d.Do(Event::Ack("d", kPreconditionFailed), At(5)), Action::Kind::kHalt));
}

TEST(RolloutTest, RefusalsBeforeAResumeDoNotHaltAgain) {
  Driver d = Approved({Host("a"), Host("b")}, Spec({"a"}, {100}, 30));
  d.Do(Event::Ack("a", kApplied), At(1));
  EXPECT_TRUE(Has(d.Do(Refusal("a", "10.0.0.9", 2), At(3)), Action::Kind::kHalt));
  d.Do(Event::Resume(), At(10));
  EXPECT_THAT(d.Do(Refusal("a", "10.0.0.9", 5), At(11)), IsEmpty());  // reported late
  EXPECT_TRUE(Has(d.Do(Refusal("a", "10.0.0.9", 12), At(12)), Action::Kind::kHalt));
}

TEST(RolloutTest, ResumeOfAChangeHaltedBeforeAnyDispatchIsApprovedAgain) {
  RolloutSpec spec = Spec({}, {100}, 0);
  spec.windows = {*ParseWindow("*:Sun 01:00-02:00")};
  Driver d = Approved({Host("a")}, spec);
  d.Do(Event::Halt("not this weekend"), At(1));
  d.Do(Event::Resume(), At(2));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_APPROVED);
}

TEST(RolloutTest, RollbackTargetsEachAppliedHostOnce) {
  Driver d = Approved({Host("a"), Host("b"), Host("c"), Host("d")}, Spec({}, {100}, 0));
  d.Do(Event::Ack("a", kApplied), At(1));
  d.Do(Event::Ack("b", kPreconditionFailed), At(1));  // halts; b changed nothing
  const std::vector<Action>& actions = d.Do(Event::Rollback("ann: clients broke"), At(5));
  EXPECT_THAT(RolledBack(actions), ElementsAre("a"));
  EXPECT_EQ(actions.back().reason, "ann: clients broke");
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_ROLLED_BACK);
  // c applies after all: it gets its rollback as soon as its ack arrives.
  EXPECT_THAT(RolledBack(d.Do(Event::Ack("c", kApplied), At(6))), ElementsAre("c"));
  EXPECT_THAT(d.Do(Event::Ack("c", kApplied), At(7)), IsEmpty());  // the same ack again
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(60))), IsEmpty());
  absl::Status twice = d.Try(Event::Rollback("again"), At(61));
  EXPECT_EQ(RefusalOf(twice), Refusal::kWrongState) << twice;
}

TEST(RolloutTest, RollbackOfACompletedChange) {
  Driver d = Approved({Host("a"), Host("b")}, Spec({}, {100}, 0));
  d.Do(Event::Ack("a", kApplied), At(1));
  d.Do(Event::Ack("b", kApplied), At(2));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_COMPLETED);
  EXPECT_THAT(RolledBack(d.Do(Event::Rollback("regret"), At(90))), ElementsAre("a", "b"));
}

TEST(RolloutTest, AnExpiredChangeIsNeverDispatched) {
  RolloutSpec spec = Spec({}, {100}, 0);
  spec.windows = {*ParseWindow("*:Sat 22:00-06:00")};
  Driver d = Approved({Host("a")}, spec, kT0, At(60));
  EXPECT_EQ(NextDeadline(d.rollout()), At(60));
  const std::vector<Action>& actions = d.Do(Event::Tick(), At(60));
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, Action::Kind::kExpire);
  EXPECT_THAT(actions[0].reason, HasSubstr("2026-12-05T13:00:00+00:00"));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_EXPIRED);
  EXPECT_THAT(Dispatched(d.Do(Event::Tick(), At(10 * 60))), IsEmpty());  // window open now
  EXPECT_EQ(d.host("a"), kPending);
}

TEST(RolloutTest, ExpiryAppliesToProposedChangesAndApprovalsTooLate) {
  Driver proposed(NewRollout("c-7", {Host("a")}, At(60)));
  EXPECT_TRUE(Has(proposed.Do(Event::Tick(), At(60)), Action::Kind::kExpire));
  EXPECT_EQ(proposed.state(), smbfleet::v1::CHANGE_STATE_EXPIRED);
  EXPECT_EQ(RefusalOf(proposed.Try(Event::Approve(Spec({}, {100}, 0)), At(61))),
            Refusal::kWrongState);

  // Approved after its not-after time without a tick in between: expires, dispatches nothing.
  Driver late(NewRollout("c-8", {Host("a")}, At(60)));
  const std::vector<Action>& actions = late.Do(Event::Approve(Spec({}, {100}, 0)), At(61));
  EXPECT_THAT(Dispatched(actions), IsEmpty());
  EXPECT_EQ(late.state(), smbfleet::v1::CHANGE_STATE_EXPIRED);
}

TEST(RolloutTest, ExpireEventStopsARollingOutChange) {
  Driver d = Approved({Host("a"), Host("b")}, Spec({"a"}, {100}, 0));
  EXPECT_TRUE(Has(d.Do(Event::Expire(), At(5)), Action::Kind::kExpire));
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_EXPIRED);
  d.Do(Event::Ack("a", kApplied), At(6));  // the late ack is still recorded
  EXPECT_EQ(d.host("a"), kApplied);
  EXPECT_EQ(d.host("b"), kPending);
  EXPECT_EQ(d.Try(Event::Expire(), At(7)).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(RolloutTest, OrdersLiveNoLongerThanTheAckTimeout) {
  absl::StatusOr<Transition> t =
      Step(NewRollout("c-9", {Host("a")}, At(24 * 60)), Event::Approve(Spec({}, {100}, 0)), kT0);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->actions.size(), 1u);
  EXPECT_EQ(t->actions[0].not_after, At(30));
}

TEST(RolloutTest, EventsTheStateDoesNotAllow) {
  struct Case {
    std::string name;
    std::function<Driver()> make;
    Event event;
    absl::StatusCode code;
    std::string message;
  };
  auto rolling = [] { return Approved({Host("a"), Host("b")}, Spec({"a"}, {100}, 0)); };
  auto proposed = [] { return Driver(NewRollout("c-7", {Host("a")}, absl::InfiniteFuture())); };
  const std::vector<Case> cases = {
      {"resume while rolling out", rolling, Event::Resume(), absl::StatusCode::kFailedPrecondition,
       "change c-7: cannot resume: it is ROLLING_OUT (only HALTED)"},
      {"approve twice", rolling, Event::Approve(Spec({}, {100}, 0)),
       absl::StatusCode::kFailedPrecondition, "cannot approve: it is ROLLING_OUT"},
      {"reject while rolling out", rolling, Event::Reject("no"),
       absl::StatusCode::kFailedPrecondition, "cannot reject: it is ROLLING_OUT"},
      {"halt a proposal", proposed, Event::Halt("x"), absl::StatusCode::kFailedPrecondition,
       "cannot halt: it is PROPOSED"},
      {"rollback a proposal", proposed, Event::Rollback("x"), absl::StatusCode::kFailedPrecondition,
       "cannot roll back: it is PROPOSED"},
      {"ack from a host not in the change", rolling, Event::Ack("zz", kApplied),
       absl::StatusCode::kNotFound, "change c-7: no host \"zz\" in this change"},
      {"ack from a host never dispatched", rolling, Event::Ack("b", kApplied),
       absl::StatusCode::kFailedPrecondition, "change c-7: host b acked APPLIED but is PENDING"},
      {"ack with a state that is no result", rolling, Event::Ack("a", kDispatched),
       absl::StatusCode::kInvalidArgument, "host a acked DISPATCHED, not an ack result"},
      {"canary not among the hosts", proposed, Event::Approve(Spec({"zz"}, {100}, 0)),
       absl::StatusCode::kInvalidArgument,
       "change c-7: --canary \"zz\": not one of the change's hosts"},
      {"refusal from a host not in the change", rolling, Refusal("zz", "x", 1),
       absl::StatusCode::kNotFound, "no host \"zz\""},
  };
  for (const Case& c : cases) {
    Driver d = c.make();
    Rollout before = d.rollout();
    absl::Status status = d.Try(c.event, At(1));
    EXPECT_EQ(status.code(), c.code) << c.name << ": " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << c.name;
    EXPECT_EQ(d.state(), before.state) << c.name;
  }
}

TEST(RolloutTest, AHostAckedOnceCannotAckSomethingElse) {
  Driver d = Approved({Host("a")}, Spec({}, {100}, 10));
  d.Do(Event::Ack("a", kApplied), At(1));
  absl::Status status = d.Try(Event::Ack("a", kFailed), At(2));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "change c-7: host a acked FAILED but is APPLIED");
  EXPECT_EQ(d.host("a"), kApplied);
}

TEST(RolloutTest, RejectEndsAProposal) {
  Driver d(NewRollout("c-7", {Host("a")}, absl::InfiniteFuture()));
  EXPECT_THAT(d.Do(Event::Reject("not now"), kT0), IsEmpty());
  EXPECT_EQ(d.state(), smbfleet::v1::CHANGE_STATE_REJECTED);
  EXPECT_THAT(d.Do(Event::Tick(), At(60)), IsEmpty());
}

}  // namespace
}  // namespace smbfleet::collector::changes
