// The in-memory ChangeStore keeps the interface's contracts.
#include "collector/store/memory/memory_change_store.h"

#include <atomic>
#include <thread>

#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

v1::Change NewChange(const std::string& id, std::vector<std::string> hosts) {
  v1::Change c;
  c.set_id(id);
  c.set_state(v1::CHANGE_STATE_PROPOSED);
  c.set_version(1);
  c.set_proposed_by("pat");
  for (const auto& h : hosts) {
    auto* ch = c.add_hosts();
    ch->set_host(h);
    ch->set_state(v1::HOST_CHANGE_STATE_PENDING);
  }
  return c;
}

v1::AuditEntry Audit(const std::string& action, const std::string& change_id) {
  v1::AuditEntry e;
  e.set_action(action);
  e.set_change_id(change_id);
  e.set_actor("pat");
  return e;
}

// A step that dispatches `host` with an order valid until `not_after`.
ChangeStore::StepFn Dispatch(const std::string& host, absl::Time not_after) {
  return [=](const v1::Change& c) -> absl::StatusOr<ChangeUpdate> {
    ChangeUpdate u{c, {Audit("dispatched", c.id())}, std::nullopt};
    u.change.set_state(v1::CHANGE_STATE_ROLLING_OUT);
    for (auto& h : *u.change.mutable_hosts()) {
      if (h.host() != host) continue;
      h.set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
      h.set_nonce("n1");
      *h.mutable_order_not_after() = Ts(not_after);
    }
    return u;
  };
}

ChangeStore::StepFn Ack(const std::string& host, v1::HostChangeState result,
                        const std::string& message) {
  return [=](const v1::Change& c) -> absl::StatusOr<ChangeUpdate> {
    ChangeUpdate u{c, {Audit("acked", c.id())}, std::nullopt};
    for (auto& h : *u.change.mutable_hosts()) {
      if (h.host() != host) continue;
      h.set_state(result);
      h.set_message(message);
      *h.mutable_finished_at() = Ts(kNow);
    }
    return u;
  };
}

TEST(MemoryChangeStoreTest, CreateGetListNewestFirstWithoutHosts) {
  MemoryChangeStore store;
  ASSERT_TRUE(store.CreateChange(NewChange("c1", {"fs1"}), {Audit("proposed", "c1")}).ok());
  ASSERT_TRUE(store.CreateChange(NewChange("c2", {"fs2", "fs3"}), {}).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(store.CreateChange(NewChange("c1", {"fs1"}), {})));

  auto got = store.GetChange("c2");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->hosts_size(), 2);
  auto missing = store.GetChange("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  auto list = store.ListChanges({});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id(), "c2");
  EXPECT_EQ((*list)[0].hosts_size(), 0);
  ChangeQuery rolling;
  rolling.state = v1::CHANGE_STATE_ROLLING_OUT;
  EXPECT_TRUE(store.ListChanges(rolling)->empty());
}

TEST(MemoryChangeStoreTest, OwnApprovalIsRefusedAtCreate) {
  MemoryChangeStore store;
  v1::Change c = NewChange("c1", {"fs1"});
  c.add_approvals()->set_approver("pat");
  absl::Status s = store.CreateChange(c, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_FALSE(store.GetChange("c1")->has_value());
}

TEST(MemoryChangeStoreTest, FailedStepWritesNothing) {
  MemoryChangeStore store;
  ASSERT_TRUE(store.CreateChange(NewChange("c1", {"fs1"}), {}).ok());
  auto r = store.UpdateChange("c1", [](const v1::Change&) -> absl::StatusOr<ChangeUpdate> {
    return absl::FailedPreconditionError("refused");
  });
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status()));
  EXPECT_TRUE(store.ListAudit({})->empty());
  EXPECT_TRUE(absl::IsNotFound(store.UpdateChange("nope", Dispatch("fs1", kNow)).status()));
}

TEST(MemoryChangeStoreTest, PendingHostStatusesAndLiveIds) {
  MemoryChangeStore store;
  ASSERT_TRUE(store.CreateChange(NewChange("c1", {"fs1", "fs2"}), {}).ok());
  ASSERT_TRUE(store.CreateChange(NewChange("c2", {"fs1"}), {}).ok());
  EXPECT_TRUE(store.LiveChangeIds()->empty());  // PROPOSED is not ticked
  ASSERT_TRUE(store.UpdateChange("c1", Dispatch("fs1", kNow + absl::Hours(1))).ok());
  ASSERT_TRUE(store.UpdateChange("c2", Dispatch("fs1", kNow + absl::Minutes(1))).ok());

  auto pending = store.PendingForHost("fs1", kNow);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ((*pending)[0].id(), "c1");  // oldest first
  ASSERT_EQ((*pending)[0].hosts_size(), 1);
  EXPECT_EQ((*pending)[0].hosts(0).host(), "fs1");
  // An order past its not-after is no longer pending.
  EXPECT_EQ(store.PendingForHost("fs1", kNow + absl::Minutes(2))->size(), 1u);
  EXPECT_TRUE(store.PendingForHost("fs2", kNow)->empty());
  EXPECT_THAT(*store.LiveChangeIds(), ElementsAre("c1", "c2"));

  auto statuses = store.HostStatuses({"fs1", "fs2"});
  ASSERT_TRUE(statuses.ok());
  ASSERT_EQ(statuses->size(), 1u);
  EXPECT_EQ(statuses->at("fs1").desired_change_id(), "c2");
  EXPECT_TRUE(statuses->at("fs1").applied_change_id().empty());

  ASSERT_TRUE(store.UpdateChange("c2", Ack("fs1", v1::HOST_CHANGE_STATE_FAILED, "boom")).ok());
  auto failed = store.HostStatuses({"fs1"})->at("fs1");
  EXPECT_EQ(failed.last_result(), v1::HOST_CHANGE_STATE_FAILED);
  EXPECT_EQ(failed.last_error(), "boom");
  EXPECT_TRUE(failed.applied_change_id().empty());

  ASSERT_TRUE(store.UpdateChange("c1", Ack("fs1", v1::HOST_CHANGE_STATE_APPLIED, "")).ok());
  auto applied = store.HostStatuses({"fs1"})->at("fs1");
  EXPECT_EQ(applied.applied_change_id(), "c1");
  EXPECT_EQ(applied.applied_version(), 1u);
  EXPECT_EQ(applied.last_result(), v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_TRUE(applied.last_error().empty());
  EXPECT_TRUE(store.PendingForHost("fs1", kNow)->empty());
}

TEST(MemoryChangeStoreTest, CreatedChangeIsStoredWithTheStep) {
  MemoryChangeStore store;
  ASSERT_TRUE(store.CreateChange(NewChange("c1", {"fs1"}), {}).ok());
  auto r = store.UpdateChange("c1", [](const v1::Change& c) -> absl::StatusOr<ChangeUpdate> {
    ChangeUpdate u{c, {Audit("rolled_back", "c1")}, NewChange("c1-rb", {"fs1"})};
    u.change.set_rolled_back_by("c1-rb");
    return u;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rolled_back_by(), "c1-rb");
  EXPECT_TRUE(store.GetChange("c1-rb")->has_value());
}

TEST(MemoryChangeStoreTest, StepsOnOneChangeRunOneAfterAnother) {
  MemoryChangeStore store;
  v1::Change c = NewChange("c1", {"fs1"});
  c.set_current_wave(0);
  ASSERT_TRUE(store.CreateChange(c, {}).ok());
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  auto bump = [&](const v1::Change& cur) -> absl::StatusOr<ChangeUpdate> {
    if (inside.fetch_add(1) != 0) overlapped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ChangeUpdate u{cur, {}, std::nullopt};
    u.change.set_current_wave(cur.current_wave() + 1);
    inside.fetch_sub(1);
    return u;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) ASSERT_TRUE(store.UpdateChange("c1", bump).ok());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlapped);
  EXPECT_EQ((*store.GetChange("c1"))->current_wave(), 40);
}

TEST(MemoryChangeStoreTest, AuditSeqAndFilters) {
  MemoryChangeStore store;
  ASSERT_TRUE(store.CreateChange(NewChange("c1", {"fs1"}), {Audit("proposed", "c1")}).ok());
  ASSERT_TRUE(store.AppendAudit({Audit("note", "c2"), Audit("note", "c1")}).ok());
  auto all = store.ListAudit({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].seq(), 1);
  EXPECT_EQ((*all)[2].seq(), 3);
  EXPECT_TRUE((*all)[0].has_at());
  AuditQuery q;
  q.change_id = "c1";
  q.after_seq = 1;
  auto some = store.ListAudit(q);
  ASSERT_EQ(some->size(), 1u);
  EXPECT_EQ((*some)[0].seq(), 3);
}

TEST(MemoryChangeStoreTest, WaiversFourEyesExpiryAndPublishing) {
  MemoryHostStore hosts;
  MemoryComplianceStore compliance(&hosts);
  MemoryChangeStore store(&compliance);
  v1::Waiver w;
  w.set_id("w1");
  w.set_rule_id("smb.signing");
  w.set_host("fs1");
  w.set_created_by("pat");
  w.set_state(v1::WAIVER_STATE_REQUESTED);
  *w.mutable_expires_at() = Ts(kNow + absl::Hours(1));
  v1::AuditEntry requested;
  requested.set_action("waiver_requested");
  requested.set_waiver_id("w1");
  ASSERT_TRUE(store.CreateWaiver(w, requested).ok());
  EXPECT_TRUE(store.ListWaivers(false, kNow)->empty());
  EXPECT_EQ(store.ListWaivers(true, kNow)->size(), 1u);

  auto approve_by = [&](const std::string& who) {
    return store.UpdateWaiver("w1", [who](const v1::Waiver& cur) {
      v1::Waiver next = cur;
      next.set_state(v1::WAIVER_STATE_APPROVED);
      next.set_approved_by(who);
      v1::AuditEntry e;
      e.set_action("waiver_approved");
      e.set_waiver_id("w1");
      return absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>>(std::make_pair(next, e));
    });
  };
  auto own = approve_by("pat");
  EXPECT_TRUE(absl::IsFailedPrecondition(own.status())) << own.status();
  EXPECT_THAT(own.status().message(), HasSubstr("own waiver"));
  ASSERT_TRUE(approve_by("ann").ok());
  EXPECT_EQ(store.ListWaivers(false, kNow)->size(), 1u);
  EXPECT_EQ(compliance.ActiveWaivers()->size(), 1u);
  auto later = store.ListWaivers(true, kNow + absl::Hours(2));
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].state(), v1::WAIVER_STATE_EXPIRED);
  EXPECT_TRUE(store.ListWaivers(false, kNow + absl::Hours(2))->empty());
  EXPECT_EQ(store.ListAudit({})->size(), 2u);  // the refused approval wrote nothing
}

}  // namespace
}  // namespace smbfleet::collector
