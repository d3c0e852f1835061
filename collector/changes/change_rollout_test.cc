// The Change <-> Rollout mapping: a step through the mapping is the same as a step on the
// rollout, and what Step does not know passes through.
#include "collector/changes/change_rollout.h"

#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::UnorderedElementsAre;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

v1::Change Proposed() {
  v1::Change c;
  c.set_id("c1");
  c.set_state(v1::CHANGE_STATE_PROPOSED);
  c.set_proposed_by("pat");
  *c.mutable_not_after() =
      TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(kNow + absl::Hours(24)));
  for (const char* name : {"fs1", "fs2"}) {
    auto* h = c.add_hosts();
    h->set_host(name);
    h->set_state(v1::HOST_CHANGE_STATE_PENDING);
    h->set_wave(-1);
    (*h->mutable_labels())["site"] = "ams";
    auto* step = h->add_steps();
    step->set_setting("server.requireSigning");
    step->set_value("true");
  }
  auto* client = c.mutable_hosts(0)->mutable_impact()->add_clients();
  client->set_client_name("OLDPC");
  client->set_client_address("10.0.0.9");
  return c;
}

TEST(ChangeRolloutTest, ReadsHostsLabelsAndExpectedRefusals) {
  auto r = RolloutFromChange(Proposed(), absl::Minutes(15));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->change_id, "c1");
  EXPECT_EQ(r->not_after, kNow + absl::Hours(24));
  EXPECT_EQ(r->spec.ack_timeout, absl::Minutes(15));
  ASSERT_EQ(r->hosts.size(), 2u);
  EXPECT_EQ(r->hosts[0].labels.at("site"), "ams");
  EXPECT_THAT(r->hosts[0].expected_refusals, UnorderedElementsAre("OLDPC", "10.0.0.9"));
  EXPECT_EQ(r->hosts[0].dispatched_at, absl::InfinitePast());
}

TEST(ChangeRolloutTest, StepsRoundTripThroughTheStoredChange) {
  v1::Change c = Proposed();
  c.mutable_rollout()->add_canary_hosts("fs2");
  c.mutable_rollout()->set_watch("10m");
  auto r = RolloutFromChange(c, absl::Minutes(15));
  ASSERT_TRUE(r.ok());
  auto t = Step(*r, Event::Approve(r->spec), kNow);
  ASSERT_TRUE(t.ok()) << t.status();
  ApplyRollout(t->rollout, &c);
  EXPECT_EQ(c.state(), v1::CHANGE_STATE_ROLLING_OUT);
  EXPECT_EQ(c.wave_count(), 2);
  EXPECT_EQ(c.hosts(1).state(), v1::HOST_CHANGE_STATE_DISPATCHED);
  EXPECT_EQ(c.hosts(1).wave(), 0);
  EXPECT_EQ(c.hosts(0).wave(), 1);
  EXPECT_EQ(TimeUtil::TimestampToSeconds(c.hosts(1).dispatched_at()), absl::ToUnixSeconds(kNow));
  EXPECT_FALSE(c.hosts(0).has_dispatched_at());
  EXPECT_EQ(c.hosts(1).steps_size(), 1);  // plans pass through

  // Read back: the same rollout, so the next step behaves as on the original.
  auto again = RolloutFromChange(c, absl::Minutes(15));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->hosts[1].dispatched_at, kNow);
  EXPECT_EQ(again->spec.watch, absl::Minutes(10));
  auto halted = Step(*again, Event::Ack("fs2", v1::HOST_CHANGE_STATE_FAILED, "boom"), kNow);
  ASSERT_TRUE(halted.ok());
  ApplyRollout(halted->rollout, &c);
  EXPECT_EQ(c.state(), v1::CHANGE_STATE_HALTED);
  EXPECT_THAT(c.halt_reason(), ::testing::HasSubstr("fs2"));
  EXPECT_EQ(c.hosts(1).message(), "boom");

  auto resumed = Step(*RolloutFromChange(c, absl::Minutes(15)), Event::Resume(), kNow);
  ASSERT_TRUE(resumed.ok());
  ApplyRollout(resumed->rollout, &c);
  EXPECT_EQ(TimeUtil::TimestampToSeconds(c.resumed_at()), absl::ToUnixSeconds(kNow));
  EXPECT_TRUE(c.halt_reason().empty());
}

TEST(ChangeRolloutTest, MalformedStoredOptionsNameTheFlag) {
  v1::Change c = Proposed();
  c.mutable_rollout()->set_waves("50%,20%");
  auto r = RolloutFromChange(c, absl::Minutes(15));
  EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("waves"));
}

TEST(ChangeRolloutTest, FactsCountApproversAndRefusedClients) {
  v1::Change c = Proposed();
  c.mutable_impact()->set_refused_clients(1);
  c.add_approvals()->set_approver("ann");
  ChangeFacts f = FactsOf(c);
  EXPECT_EQ(f.proposer, "pat");
  EXPECT_EQ(f.host_count, 2);
  EXPECT_EQ(f.refused_clients, 1);
  EXPECT_THAT(f.approvers, ::testing::ElementsAre("ann"));
}

}  // namespace
}  // namespace smbfleet::collector::changes
