// The ChangeStore contract, run against each implementation (see the header).
#include "tests/integration/change_store_conformance.h"

#include <map>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"

namespace smbfleet::collector::store_testing {

void ChangeStoreConformanceTest::SetUp() {
  under_test_ = GetParam().make();
  if (!under_test_.skip.empty()) GTEST_SKIP() << under_test_.skip;
  ASSERT_NE(under_test_.changes, nullptr);
  store_ = under_test_.changes.get();
}

namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kT0 = 1'800'000'000;  // a fixed "now" for orders

google::protobuf::Timestamp Ts(int64_t seconds) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  return ts;
}

google::protobuf::Timestamp TsOf(absl::Time t) { return Ts(absl::ToUnixSeconds(t)); }

v1::Change NewChange(const std::string& id, const std::string& proposer,
                     const std::vector<std::string>& hosts) {
  v1::Change c;
  c.set_id(id);
  c.set_state(v1::CHANGE_STATE_PROPOSED);
  c.set_version(1);
  c.set_source(v1::CHANGE_SOURCE_HOSTS);
  c.set_reason("encrypt finance");
  c.set_proposed_by(proposer);
  *c.mutable_proposed_at() = Ts(kT0 - 3600);
  *c.mutable_updated_at() = Ts(kT0 - 3600);
  *c.mutable_not_after() = Ts(kT0 + 7 * 86400);
  c.set_content_hash(absl::StrCat("hash-", id));
  c.set_approvals_required(1);
  for (const auto& name : hosts) {
    auto* h = c.add_hosts();
    h->set_host(name);
    h->set_state(v1::HOST_CHANGE_STATE_PENDING);
    h->set_wave(-1);
    auto* step = h->add_steps();
    step->set_setting("share.encryptData");
    step->set_share("finance");
    step->set_expected_current("false");
    step->set_value("true");
  }
  return c;
}

v1::AuditEntry Audit(const std::string& actor, const std::string& action,
                     const std::string& change_id) {
  v1::AuditEntry e;
  e.set_actor(actor);
  e.set_action(action);
  e.set_change_id(change_id);
  return e;
}

v1::ChangeHost* HostOf(v1::Change& c, const std::string& host) {
  for (auto& h : *c.mutable_hosts()) {
    if (h.host() == host) return &h;
  }
  return nullptr;
}

void Dispatch(v1::ChangeHost* h, const std::string& nonce, int64_t not_after) {
  h->set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
  h->set_wave(0);
  *h->mutable_dispatched_at() = Ts(kT0);
  *h->mutable_order_not_after() = Ts(not_after);
  h->set_nonce(nonce);
}

void Ack(v1::ChangeHost* h, v1::HostChangeState result, const std::string& message, int64_t at) {
  h->set_state(result);
  h->set_message(message);
  *h->mutable_finished_at() = Ts(at);
}

// A step that always succeeds with `next` and one audit entry.
ChangeStore::StepFn Write(const v1::Change& next, const std::string& action) {
  return [next, action](const v1::Change&) -> absl::StatusOr<ChangeUpdate> {
    ChangeUpdate u;
    u.change = next;
    u.audit.push_back(Audit("carol", action, next.id()));
    return u;
  };
}

// The actions of the audit entries `query` selects, oldest first.
std::vector<std::string> Actions(ChangeStore& store, const AuditQuery& query) {
  std::vector<std::string> out;
  auto entries = store.ListAudit(query);
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return out;
  for (const auto& e : *entries) out.push_back(e.action());
  return out;
}

std::string Diff(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  std::string out;
  MessageDifferencer d;
  d.ReportDifferencesToString(&out);
  return d.Compare(a, b) ? "" : out;
}

// Sets every field of `m` (one element per repeated field or map), so that a field without a
// place in the store shows up as a difference.
void FillEveryField(google::protobuf::Message* m, int depth, int* n) {
  using FD = google::protobuf::FieldDescriptor;
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  if (d->full_name() == "google.protobuf.Timestamp") {
    r->SetInt64(m, d->FindFieldByName("seconds"), kT0 + ++*n);
    r->SetInt32(m, d->FindFieldByName("nanos"), 123000);  // whole microseconds
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    ++*n;
    if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      if (depth >= 4) continue;
      FillEveryField(f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f), depth + 1,
                     n);
      continue;
    }
    const bool rep = f->is_repeated();
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32:
        rep ? r->AddInt32(m, f, *n) : r->SetInt32(m, f, *n);
        break;
      case FD::CPPTYPE_INT64:
        rep ? r->AddInt64(m, f, *n) : r->SetInt64(m, f, *n);
        break;
      case FD::CPPTYPE_UINT32:
        rep ? r->AddUInt32(m, f, *n) : r->SetUInt32(m, f, *n);
        break;
      case FD::CPPTYPE_UINT64:
        rep ? r->AddUInt64(m, f, *n) : r->SetUInt64(m, f, *n);
        break;
      case FD::CPPTYPE_DOUBLE:
        rep ? r->AddDouble(m, f, *n + 0.5) : r->SetDouble(m, f, *n + 0.5);
        break;
      case FD::CPPTYPE_FLOAT:
        rep ? r->AddFloat(m, f, 2.5F) : r->SetFloat(m, f, 2.5F);
        break;
      case FD::CPPTYPE_BOOL:
        rep ? r->AddBool(m, f, true) : r->SetBool(m, f, true);
        break;
      case FD::CPPTYPE_ENUM: {
        const auto* last = f->enum_type()->value(f->enum_type()->value_count() - 1);
        rep ? r->AddEnum(m, f, last) : r->SetEnum(m, f, last);
        break;
      }
      case FD::CPPTYPE_STRING: {
        const std::string s = absl::StrCat(f->name(), "-", *n);
        rep ? r->AddString(m, f, s) : r->SetString(m, f, s);
        break;
      }
      default:
        break;
    }
  }
}

TEST_P(ChangeStoreConformanceTest, CreateGetAndList) {
  v1::Change a = NewChange("chg-a", "alice", {"fs01", "fs02"});
  ASSERT_TRUE(store_->CreateChange(a, {Audit("alice", "proposed", "chg-a")}).ok());
  v1::Change b = NewChange("chg-b", "alice", {"fs03"});
  auto* approval = b.add_approvals();
  approval->set_approver("carol");
  *approval->mutable_at() = Ts(kT0 - 60);
  approval->set_comment("ok");
  b.set_state(v1::CHANGE_STATE_APPROVED);
  ASSERT_TRUE(store_->CreateChange(b, {}).ok());

  auto got = store_->GetChange("chg-a");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(Diff(a, **got), "");
  EXPECT_EQ(Diff(b, **store_->GetChange("chg-b")), "");
  EXPECT_FALSE(store_->GetChange("chg-none")->has_value());

  auto all = store_->ListChanges({});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id(), "chg-b");  // newest first
  EXPECT_EQ((*all)[1].id(), "chg-a");
  EXPECT_EQ((*all)[0].hosts_size(), 0);
  EXPECT_EQ((*all)[0].approvals_size(), 1);
  ChangeQuery proposed;
  proposed.state = v1::CHANGE_STATE_PROPOSED;
  auto only = store_->ListChanges(proposed);
  ASSERT_EQ(only->size(), 1u);
  EXPECT_EQ((*only)[0].id(), "chg-a");
  ChangeQuery one;
  one.limit = 1;
  EXPECT_EQ(store_->ListChanges(one)->size(), 1u);

  auto audit = store_->ListAudit({});
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].action(), "proposed");
}

TEST_P(ChangeStoreConformanceTest, EveryFieldSurvivesTheRoundTrip) {
  ASSERT_TRUE(store_->CreateChange(NewChange("rt-base", "alice", {"fs09"}), {}).ok());
  v1::Change c;
  int n = 0;
  FillEveryField(&c, 0, &n);
  c.set_id("rt");
  c.set_proposed_by("alice");
  c.set_rollback_of("rt-base");
  c.set_rolled_back_by("rt-base");
  ASSERT_EQ(c.approvals_size(), 1);
  c.mutable_approvals(0)->set_approver("bob");
  ASSERT_EQ(c.hosts_size(), 1);
  c.mutable_hosts(0)->set_host("fs01");
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());
  auto got = store_->GetChange("rt");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(c, **got), "");
}

// A step that moves only hosts' workflow state (a dispatch, a timeout) and one that moves the
// state with any other field of a host both read back as written, through a step on the whole
// change and through one on some hosts (an ack): the store may write only what changed, but
// never drops a change beside it. Counters are not the steps' to write.
TEST_P(ChangeStoreConformanceTest, AStepMovingAHostsStateAloneOrWithAnyOtherFieldReadsBack) {
  ASSERT_TRUE(store_->CreateChange(NewChange("st-base", "alice", {"fs09"}), {}).ok());
  v1::Change c = NewChange("st", "alice", {"fs01", "fs02"});
  int n = 0;
  for (v1::ChangeHost& h : *c.mutable_hosts()) {
    const std::string name = h.host();
    FillEveryField(&h, 1, &n);
    h.set_host(name);
  }
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());
  c = **store_->GetChange("st");

  int moves = 0;
  auto move_state = [&](v1::ChangeHost* h) {
    ++moves;
    h->set_state(moves % 2 == 0 ? v1::HOST_CHANGE_STATE_DISPATCHED
                                : v1::HOST_CHANGE_STATE_TIMED_OUT);
    h->set_wave(moves);
    *h->mutable_dispatched_at() = Ts(kT0 + moves);
    *h->mutable_finished_at() = Ts(kT0 + 2 * moves);
    h->set_message(absl::StrCat("move ", moves));
    *h->mutable_order_not_after() = Ts(kT0 + 600 + moves);
    h->set_nonce(absl::StrCat("n", moves));
    h->set_rollback_sent(moves % 2 == 1);
  };
  // fs01 by steps on the whole change, fs02 by steps on itself alone.
  auto write = [&](const std::string& host, const std::string& what) {
    if (host == "fs01") {
      auto written = store_->UpdateChange("st", Write(c, what));
      ASSERT_TRUE(written.ok()) << written.status();
      return;
    }
    auto step = [&](const v1::Change& current, const std::vector<v1::ChangeHost>&,
                    const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
      HostsUpdate u;
      u.change = current;
      u.hosts.push_back(*HostOf(c, host));
      return std::optional<HostsUpdate>(std::move(u));
    };
    ASSERT_TRUE(store_->UpdateChangeHosts("st", {host}, step).ok());
  };
  for (const std::string host : {"fs01", "fs02"}) {
    SCOPED_TRACE(host);
    move_state(HostOf(c, host));
    write(host, "state alone");
    EXPECT_EQ(Diff(c, **store_->GetChange("st")), "");

    const google::protobuf::Descriptor* d = v1::ChangeHost::descriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* f = d->field(i);
      if (f->name() == "host" || absl::StartsWith(f->name(), "counters_") ||
          f->name() == "measured") {
        continue;
      }
      SCOPED_TRACE(f->name());
      v1::ChangeHost* h = HostOf(c, host);
      h->GetReflection()->ClearField(h, f);  // set by FillEveryField, or by the move before
      move_state(h);
      write(host, f->name());
      EXPECT_EQ(Diff(c, **store_->GetChange("st")), "");
    }
  }
}

// Hosts of one change mostly carry the same steps and impact; each host still reads back with
// its own values, whether they are shared with other hosts or its own, through every read and
// write of hosts (GetChange, the workflow steps, PendingForHosts).
TEST_P(ChangeStoreConformanceTest, HostsSharingOrDifferingInTheirValuesEachReadBackTheirOwn) {
  std::vector<std::string> names;
  names.reserve(9);
  for (int i = 0; i < 9; ++i) names.push_back(absl::StrCat("fs", i));
  v1::Change c = NewChange("shared", "alice", names);
  for (int i = 0; i < 9; ++i) {
    v1::ChangeHost* h = c.mutable_hosts(i);
    h->mutable_impact()->mutable_cost()->set_summary("no change to signing or encryption");
    h->mutable_impact()->mutable_cost()->set_known(true);
    (*h->mutable_labels())["site"] = "hq";
    Dispatch(h, absl::StrCat("n", i), kT0 + 600);
  }
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.mutable_hosts(5)->mutable_steps(0)->set_value("false");                 // its own steps
  c.mutable_hosts(6)->mutable_impact()->mutable_cost()->set_summary("x2");  // its own impact
  (*c.mutable_hosts(7)->mutable_labels())["site"] = "branch";               // its own labels
  c.mutable_hosts(8)->clear_impact();                                       // none at all
  c.mutable_hosts(4)->mutable_impact()->Clear();                            // present, empty
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());
  auto got = store_->GetChange("shared");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(c, **got), "");

  // Acks of some hosts, each with its own before-values and two with the same.
  const std::vector<std::string> acking = {"fs1", "fs2", "fs5", "fs6"};
  for (const std::string& name : acking) {
    v1::ChangeHost* h = HostOf(c, name);
    Ack(h, v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 60);
    auto* before = h->add_before();
    before->set_setting("share.encryptData");
    before->set_value(name == "fs5" || name == "fs6" ? "false" : absl::StrCat("was-", name));
  }
  auto step = [&](const v1::Change& current, const std::vector<v1::ChangeHost>& hosts,
                  const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
    HostsUpdate u;
    u.change = current;
    for (const v1::ChangeHost& h : hosts) u.hosts.push_back(*HostOf(c, h.host()));
    return std::optional<HostsUpdate>(std::move(u));
  };
  ASSERT_TRUE(store_->UpdateChangeHosts("shared", acking, step).ok());
  got = store_->GetChange("shared");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(c, **got), "");

  // A whole-change step that writes every host anew (a new order for each).
  for (int i = 0; i < 9; ++i) c.mutable_hosts(i)->set_nonce(absl::StrCat("m", i));
  c.set_version(2);
  ASSERT_TRUE(store_->UpdateChange("shared", Write(c, "dispatched")).ok());
  got = store_->GetChange("shared");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(c, **got), "");

  // The pending orders carry each host's own values too.
  auto pending = store_->PendingForHosts(names, absl::FromUnixSeconds(kT0));
  ASSERT_TRUE(pending.ok()) << pending.status();
  for (const std::string name : {"fs0", "fs3", "fs4", "fs7", "fs8"}) {
    ASSERT_EQ(pending->count(name), 1u) << name;
    ASSERT_EQ(pending->at(name).size(), 1u) << name;
    ASSERT_EQ(pending->at(name)[0].hosts_size(), 1) << name;
    EXPECT_EQ(Diff(*HostOf(c, name), pending->at(name)[0].hosts(0)), "") << name;
  }
}

TEST_P(ChangeStoreConformanceTest, CreateRefusesAUsedIdAndTheProposersOwnApproval) {
  ASSERT_TRUE(store_->CreateChange(NewChange("chg-1", "alice", {"fs01"}), {}).ok());
  auto again = store_->CreateChange(NewChange("chg-1", "bob", {"fs02"}),
                                    {Audit("bob", "proposed", "chg-1")});
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_EQ((*store_->GetChange("chg-1"))->proposed_by(), "alice");

  v1::Change own = NewChange("chg-2", "alice", {"fs01"});
  own.add_approvals()->set_approver("alice");
  auto refused = store_->CreateChange(own, {Audit("alice", "proposed", "chg-2")});
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("alice"));
  EXPECT_FALSE(store_->GetChange("chg-2")->has_value());
  EXPECT_THAT(*store_->ListAudit({}), IsEmpty());
}

TEST_P(ChangeStoreConformanceTest, AFailedStepWritesNothing) {
  v1::Change c = NewChange("chg-1", "alice", {"fs01"});
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());
  auto failed =
      store_->UpdateChange("chg-1", [](const v1::Change&) -> absl::StatusOr<ChangeUpdate> {
        return absl::AbortedError("the step said no");
      });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(failed.status().message(), HasSubstr("the step said no"));

  // An approval by the proposer fails the whole step: neither the state nor the audit entry.
  v1::Change next = c;
  next.set_state(v1::CHANGE_STATE_APPROVED);
  HostOf(next, "fs01")->set_wave(0);
  next.add_approvals()->set_approver("alice");
  auto own = store_->UpdateChange("chg-1", Write(next, "approved"));
  EXPECT_EQ(own.status().code(), absl::StatusCode::kFailedPrecondition) << own.status();
  EXPECT_THAT(own.status().message(), HasSubstr("alice"));
  EXPECT_THAT(own.status().message(), HasSubstr("chg-1"));

  // A step that returns another change is refused.
  v1::Change other = NewChange("chg-x", "alice", {"fs01"});
  auto wrong = store_->UpdateChange("chg-1", Write(other, "approved"));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument) << wrong.status();

  // A linked change under a used id fails the whole step too.
  ASSERT_TRUE(store_->CreateChange(NewChange("chg-2", "bob", {"fs02"}), {}).ok());
  auto used = store_->UpdateChange("chg-1", [&](const v1::Change& current) {
    ChangeUpdate u;
    u.change = current;
    u.change.set_state(v1::CHANGE_STATE_ROLLED_BACK);
    u.created = NewChange("chg-2", "carol", {"fs01"});
    u.audit.push_back(Audit("carol", "rolled_back", "chg-1"));
    return absl::StatusOr<ChangeUpdate>(u);
  });
  EXPECT_EQ(used.status().code(), absl::StatusCode::kAlreadyExists) << used.status();
  EXPECT_EQ((*store_->GetChange("chg-2"))->proposed_by(), "bob");

  EXPECT_EQ(Diff(c, **store_->GetChange("chg-1")), "");
  EXPECT_THAT(*store_->ListAudit({}), IsEmpty());
  EXPECT_THAT(*store_->HostStatuses({"fs01"}), IsEmpty());
  EXPECT_EQ(store_->UpdateChange("chg-none", Write(c, "approved")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(ChangeStoreConformanceTest, StepsOnOneChangeRunOneAfterTheOther) {
  ASSERT_TRUE(store_->CreateChange(NewChange("chg-1", "alice", {"fs01"}), {}).ok());
  constexpr int kSteps = 8;
  auto increment = [&] {
    for (int i = 0; i < kSteps; ++i) {
      auto done = store_->UpdateChange(
          "chg-1", [](const v1::Change& current) -> absl::StatusOr<ChangeUpdate> {
            ChangeUpdate u;
            u.change = current;
            // Read, wait, write: without the lock, the other thread's step would be lost.
            absl::SleepFor(absl::Milliseconds(5));
            u.change.set_version(current.version() + 1);
            u.audit.push_back(Audit("collector", "dispatched", current.id()));
            return u;
          });
      ASSERT_TRUE(done.ok()) << done.status();
    }
  };
  std::thread t1(increment);
  std::thread t2(increment);
  t1.join();
  t2.join();
  EXPECT_EQ((*store_->GetChange("chg-1"))->version(), 1u + 2 * kSteps);
  AuditQuery q;
  q.change_id = "chg-1";
  EXPECT_EQ(store_->ListAudit(q)->size(), 2u * kSteps);
}

TEST_P(ChangeStoreConformanceTest, AStepWritesHostsApprovalsAuditAndTheLinkedChange) {
  v1::Change c = NewChange("chg-1", "alice", {"fs01", "fs02"});
  ASSERT_TRUE(store_->CreateChange(c, {Audit("alice", "proposed", "chg-1")}).ok());

  v1::Change approved = c;
  approved.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  auto* a = approved.add_approvals();
  a->set_approver("carol");
  *a->mutable_at() = Ts(kT0);
  approved.mutable_rollout()->set_waves("50%,100%");
  approved.set_wave_count(2);
  Dispatch(HostOf(approved, "fs01"), "n1", kT0 + 600);
  HostOf(approved, "fs02")->set_wave(1);
  auto written = store_->UpdateChange("chg-1", Write(approved, "approved"));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(Diff(approved, *written), "");
  EXPECT_EQ(Diff(approved, **store_->GetChange("chg-1")), "");

  // A second approver, an ack, and the rollback made in the same step.
  v1::Change rolled = approved;
  auto* second = rolled.add_approvals();
  second->set_approver("dave");
  *second->mutable_at() = Ts(kT0 + 1);
  v1::ChangeHost* fs01 = HostOf(rolled, "fs01");
  Ack(fs01, v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 30);
  auto* before = fs01->add_before();
  before->set_setting("share.encryptData");
  before->set_share("finance");
  before->set_value("false");
  *fs01->add_after() = *before;
  fs01->mutable_after(0)->set_value("true");
  fs01->set_rollback_sent(true);
  rolled.set_state(v1::CHANGE_STATE_ROLLED_BACK);
  rolled.set_rolled_back_by("chg-1-rb");
  v1::Change rollback = NewChange("chg-1-rb", "carol", {"fs01"});
  rollback.set_source(v1::CHANGE_SOURCE_ROLLBACK);
  rollback.set_rollback_of("chg-1");
  rollback.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(rollback, "fs01"), "n2", kT0 + 900);
  auto step =
      store_->UpdateChange("chg-1", [&](const v1::Change& current) -> absl::StatusOr<ChangeUpdate> {
        EXPECT_EQ(Diff(approved, current), "");  // the step sees what the last one wrote
        ChangeUpdate u;
        u.change = rolled;
        u.created = rollback;
        u.audit = {Audit("dave", "approved", "chg-1"), Audit("fs01", "acked", "chg-1"),
                   Audit("dave", "rolled_back", "chg-1")};
        return u;
      });
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(Diff(rolled, **store_->GetChange("chg-1")), "");
  EXPECT_EQ(Diff(rollback, **store_->GetChange("chg-1-rb")), "");

  AuditQuery q;
  q.change_id = "chg-1";
  EXPECT_THAT(Actions(*store_, q),
              ElementsAre("proposed", "approved", "approved", "acked", "rolled_back"));
}

// The names of `hosts`, in order.
std::vector<std::string> NamesOf(const std::vector<v1::ChangeHost>& hosts) {
  std::vector<std::string> out;
  out.reserve(hosts.size());
  for (const auto& h : hosts) out.push_back(h.host());
  return out;
}

// A step on some hosts (an ack): it is given the change without hosts or approvals, only the
// hosts it names (in that order, each once, unknown ones left out) and the other hosts counted;
// it writes the change's row, its hosts, their status and the audit, and nothing else. A step
// that asks for the whole change (nullopt) or fails writes nothing.
TEST_P(ChangeStoreConformanceTest, AStepOnSomeHostsSeesOnlyThemAndCountsTheOthers) {
  v1::Change c = NewChange("chg-h", "alice", {"fs01", "fs02", "fs03", "fs04", "fs05"});
  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  c.set_wave_count(2);
  c.set_current_wave(0);
  auto* approval = c.add_approvals();
  approval->set_approver("carol");
  *approval->mutable_at() = Ts(kT0 - 60);
  Dispatch(HostOf(c, "fs01"), "n1", kT0 + 600);
  Dispatch(HostOf(c, "fs02"), "n2", kT0 + 600);
  *HostOf(c, "fs02")->mutable_dispatched_at() = Ts(kT0 + 5);
  Dispatch(HostOf(c, "fs03"), "n3", kT0 + 600);
  Ack(HostOf(c, "fs03"), v1::HOST_CHANGE_STATE_PRECONDITION_FAILED, "drifted", kT0 + 20);
  HostOf(c, "fs04")->set_wave(0);  // waiting for its window
  HostOf(c, "fs05")->set_wave(1);
  ASSERT_TRUE(store_->CreateChange(c, {Audit("alice", "proposed", "chg-h")}).ok());

  int calls = 0;
  absl::Status whole = store_->UpdateChangeHosts(
      "chg-h", {"fs02", "nope", "fs01", "fs02"},
      [&](const v1::Change& change, const std::vector<v1::ChangeHost>& hosts,
          const OtherHosts& others) -> absl::StatusOr<std::optional<HostsUpdate>> {
        ++calls;
        v1::Change row = c;
        row.clear_hosts();
        row.clear_approvals();
        EXPECT_EQ(Diff(row, change), "");
        EXPECT_THAT(NamesOf(hosts), ElementsAre("fs02", "fs01"));
        if (hosts.size() == 2) {
          EXPECT_EQ(Diff(*HostOf(c, "fs02"), hosts[0]), "");
        }
        EXPECT_TRUE(others.wave_pending);      // fs04
        EXPECT_FALSE(others.wave_dispatched);  // fs01 and fs02 are the step's
        EXPECT_EQ(others.precondition_failed, 1u);
        EXPECT_EQ(others.earliest_dispatched, absl::InfiniteFuture());
        return std::optional<HostsUpdate>();
      });
  ASSERT_TRUE(whole.ok()) << whole;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(Diff(c, **store_->GetChange("chg-h")), "");

  // fs01's ack: its row, its status, the change's row and the audit entry.
  v1::Change acked = c;
  *acked.mutable_updated_at() = Ts(kT0 + 30);
  Ack(HostOf(acked, "fs01"), v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 30);
  auto* before = HostOf(acked, "fs01")->add_before();
  before->set_setting("share.encryptData");
  before->set_share("finance");
  before->set_value("false");
  absl::Status step = store_->UpdateChangeHosts(
      "chg-h", {"fs01"},
      [&](const v1::Change& change, const std::vector<v1::ChangeHost>& hosts,
          const OtherHosts& others) -> absl::StatusOr<std::optional<HostsUpdate>> {
        EXPECT_THAT(NamesOf(hosts), ElementsAre("fs01"));
        EXPECT_TRUE(others.wave_pending);
        EXPECT_TRUE(others.wave_dispatched);  // fs02
        EXPECT_EQ(others.precondition_failed, 1u);
        EXPECT_EQ(absl::ToUnixSeconds(others.earliest_dispatched), kT0 + 5);
        HostsUpdate u;
        u.change = change;
        *u.change.mutable_updated_at() = Ts(kT0 + 30);
        u.hosts = {*HostOf(acked, "fs01")};
        u.audit = {Audit("fs01", "acked", "chg-h")};
        return std::optional<HostsUpdate>(u);
      });
  ASSERT_TRUE(step.ok()) << step;
  EXPECT_EQ(Diff(acked, **store_->GetChange("chg-h")), "");
  auto status = store_->HostStatuses({"fs01", "fs02"});
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->at("fs01").applied_change_id(), "chg-h");
  EXPECT_EQ(status->at("fs01").last_result(), v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(status->at("fs02").desired_change_id(), "chg-h");
  EXPECT_EQ(status->at("fs02").last_result(), v1::HOST_CHANGE_STATE_UNSPECIFIED);
  AuditQuery q;
  q.change_id = "chg-h";
  EXPECT_THAT(Actions(*store_, q), ElementsAre("proposed", "acked"));

  // A host it was not given, a failed step and an unknown change write nothing.
  auto returns = [&](const v1::ChangeHost& host) -> ChangeStore::HostsStepFn {
    return [host](const v1::Change& change, const std::vector<v1::ChangeHost>&,
                  const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
      HostsUpdate u;
      u.change = change;
      u.change.set_halt_reason("should not be written");
      u.hosts = {host};
      u.audit = {Audit("collector", "halted", "chg-h")};
      return std::optional<HostsUpdate>(u);
    };
  };
  v1::ChangeHost fs02 = *HostOf(acked, "fs02");
  fs02.set_state(v1::HOST_CHANGE_STATE_FAILED);
  EXPECT_EQ(store_->UpdateChangeHosts("chg-h", {"fs01"}, returns(fs02)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_
          ->UpdateChangeHosts("chg-h", {"fs02"},
                              [](const v1::Change&, const std::vector<v1::ChangeHost>&,
                                 const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
                                return absl::AbortedError("no");
                              })
          .code(),
      absl::StatusCode::kAborted);
  EXPECT_EQ(store_->UpdateChangeHosts("chg-none", {"fs02"}, returns(fs02)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Diff(acked, **store_->GetChange("chg-h")), "");
  EXPECT_THAT(Actions(*store_, q), ElementsAre("proposed", "acked"));

  // A DISPATCHED host without a dispatch time counts as dispatched at the beginning of time.
  v1::Change undated = NewChange("chg-u", "alice", {"fs01", "fs02"});
  Dispatch(HostOf(undated, "fs01"), "n1", kT0 + 600);
  HostOf(undated, "fs01")->clear_dispatched_at();
  Dispatch(HostOf(undated, "fs02"), "n2", kT0 + 600);
  ASSERT_TRUE(store_->CreateChange(undated, {}).ok());
  absl::Time earliest;
  ASSERT_TRUE(store_
                  ->UpdateChangeHosts(
                      "chg-u", {"fs02"},
                      [&](const v1::Change&, const std::vector<v1::ChangeHost>&,
                          const OtherHosts& others) -> absl::StatusOr<std::optional<HostsUpdate>> {
                        earliest = others.earliest_dispatched;
                        return std::optional<HostsUpdate>();
                      })
                  .ok());
  EXPECT_EQ(earliest, absl::InfinitePast());
}

// Steps on some hosts and whole-change steps on one change run one after another.
TEST_P(ChangeStoreConformanceTest, StepsOnSomeHostsAndOnTheWholeChangeRunInOrder) {
  ASSERT_TRUE(store_->CreateChange(NewChange("chg-1", "alice", {"fs01"}), {}).ok());
  constexpr int kSteps = 6;
  auto whole = [&] {
    for (int i = 0; i < kSteps; ++i) {
      auto done = store_->UpdateChange(
          "chg-1", [](const v1::Change& current) -> absl::StatusOr<ChangeUpdate> {
            ChangeUpdate u;
            u.change = current;
            absl::SleepFor(absl::Milliseconds(5));
            u.change.set_version(current.version() + 1);
            return u;
          });
      ASSERT_TRUE(done.ok()) << done.status();
    }
  };
  auto scoped = [&] {
    for (int i = 0; i < kSteps; ++i) {
      absl::Status done = store_->UpdateChangeHosts(
          "chg-1", {"fs01"},
          [](const v1::Change& change, const std::vector<v1::ChangeHost>&,
             const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
            HostsUpdate u;
            u.change = change;
            // Read, wait, write: without the change's lock, a step would be lost.
            absl::SleepFor(absl::Milliseconds(5));
            u.change.set_version(change.version() + 1);
            return std::optional<HostsUpdate>(u);
          });
      ASSERT_TRUE(done.ok()) << done;
    }
  };
  std::thread t1(whole);
  std::thread t2(scoped);
  t1.join();
  t2.join();
  EXPECT_EQ((*store_->GetChange("chg-1"))->version(), 1u + 2 * kSteps);
}

v1::CounterWindow CounterWindowOf(int64_t start, std::vector<double> cpu) {
  v1::CounterWindow w;
  *w.mutable_start() = Ts(start);
  *w.mutable_end() = Ts(start + 600);
  w.mutable_interval()->set_seconds(60);
  for (size_t i = 0; i < cpu.size(); ++i) {
    auto* s = w.add_samples();
    *s->mutable_at() = Ts(start + 60 * static_cast<int64_t>(i));
    s->set_cpu_percent(cpu[i]);
    s->set_smb_read_bytes_per_second(1.5e6);
  }
  w.mutable_summary()->set_samples(static_cast<uint32_t>(cpu.size()));
  w.set_complete(true);
  return w;
}

TEST_P(ChangeStoreConformanceTest, CountersAreKeptApartFromTheWorkflowSteps) {
  v1::Change c = NewChange("chg-c", "alice", {"fs01", "fs02"});
  HostOf(c, "fs01")->mutable_impact()->mutable_cost()->set_cpu_ratio(1.3);
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());

  // The step sees the change and the host (with what it has so far); what it returns is written.
  const v1::CounterWindow before = CounterWindowOf(kT0 - 600, {10, 12, 11});
  int calls = 0;
  auto wrote = store_->UpdateHostCounters(
      "chg-c", "fs01",
      [&](const v1::Change& change, const v1::ChangeHost& host) -> absl::StatusOr<HostCounters> {
        ++calls;
        EXPECT_EQ(change.id(), "chg-c");
        EXPECT_EQ(change.version(), 1u);
        EXPECT_EQ(host.host(), "fs01");
        EXPECT_DOUBLE_EQ(host.impact().cost().cpu_ratio(), 1.3);
        EXPECT_FALSE(host.has_counters_before());
        HostCounters out;
        out.before = before;
        return out;
      });
  ASSERT_TRUE(wrote.ok()) << wrote;
  EXPECT_EQ(calls, 1);
  auto got = store_->GetChange("chg-c");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(before, HostOf(**got, "fs01")->counters_before()), "");
  EXPECT_FALSE(HostOf(**got, "fs01")->has_counters_after());
  EXPECT_FALSE(HostOf(**got, "fs02")->has_counters_before());

  // A workflow step neither sees nor overwrites them, even when it rewrites the host.
  auto step =
      store_->UpdateChange("chg-c", [&](const v1::Change& current) -> absl::StatusOr<ChangeUpdate> {
        for (const auto& h : current.hosts()) EXPECT_FALSE(h.has_counters_before()) << h.host();
        ChangeUpdate u;
        u.change = current;
        Dispatch(HostOf(u.change, "fs01"), "n1", kT0 + 600);
        return u;
      });
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_FALSE(HostOf(*step, "fs01")->has_counters_before());

  // The after-window and the measured effect; the before-window stays as it was.
  const v1::CounterWindow after = CounterWindowOf(kT0 + 60, {14, 15});
  v1::MeasuredImpact measured;
  measured.set_cpu_change_points(3.5);
  measured.set_summary("CPU +3.5 points");
  auto second = store_->UpdateHostCounters(
      "chg-c", "fs01",
      [&](const v1::Change&, const v1::ChangeHost& host) -> absl::StatusOr<HostCounters> {
        EXPECT_EQ(Diff(before, host.counters_before()), "");
        EXPECT_EQ(host.state(), v1::HOST_CHANGE_STATE_DISPATCHED);
        HostCounters out;
        out.after = after;
        out.measured = measured;
        return out;
      });
  ASSERT_TRUE(second.ok()) << second;
  got = store_->GetChange("chg-c");
  const v1::ChangeHost* fs01 = HostOf(**got, "fs01");
  EXPECT_EQ(fs01->state(), v1::HOST_CHANGE_STATE_DISPATCHED);
  EXPECT_EQ(Diff(before, fs01->counters_before()), "");
  EXPECT_EQ(Diff(after, fs01->counters_after()), "");
  EXPECT_EQ(Diff(measured, fs01->measured()), "");

  // A failed step writes nothing; an unknown change or host is NotFound.
  auto failed = store_->UpdateHostCounters(
      "chg-c", "fs01",
      [](const v1::Change&, const v1::ChangeHost&) -> absl::StatusOr<HostCounters> {
        return absl::FailedPreconditionError("version moved on");
      });
  EXPECT_TRUE(absl::IsFailedPrecondition(failed)) << failed;
  got = store_->GetChange("chg-c");
  EXPECT_EQ(Diff(after, HostOf(**got, "fs01")->counters_after()), "");
  auto never = [&](const v1::Change&, const v1::ChangeHost&) -> absl::StatusOr<HostCounters> {
    ADD_FAILURE() << "the step ran for an unknown change or host";
    return HostCounters();
  };
  EXPECT_TRUE(absl::IsNotFound(store_->UpdateHostCounters("chg-none", "fs01", never)));
  EXPECT_TRUE(absl::IsNotFound(store_->UpdateHostCounters("chg-c", "fs09", never)));
}

TEST_P(ChangeStoreConformanceTest, MeasuredChangeHostsNewestFirstWithTheirPlatform) {
  ASSERT_NE(under_test_.hosts, nullptr);
  v1::Posture posture;
  posture.mutable_host()->set_hostname("fs01");
  posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  *posture.mutable_collected_at() = Ts(kT0 - 7200);
  IncomingReport report;
  report.host = "fs01";
  report.report_id = "7c1b2c3d-0000-4000-8000-000000000001";
  report.posture = &posture;
  report.digest = "c0ffee01";
  report.received_at = absl::FromUnixSeconds(kT0 - 7200);
  auto saved = under_test_.hosts->SaveReport(report);
  ASSERT_TRUE(saved.ok()) << saved.status();

  // fs01 is a stored Samba host, fs02 is not stored, fs03 has no measured impact; chg-old
  // finished before `since`.
  auto applied = [](v1::Change c, std::map<std::string, int64_t> finished) {
    c.set_state(v1::CHANGE_STATE_COMPLETED);
    for (auto& h : *c.mutable_hosts()) {
      h.set_state(v1::HOST_CHANGE_STATE_APPLIED);
      *h.mutable_finished_at() = Ts(finished.at(h.host()));
      h.mutable_impact()->mutable_cost()->set_cpu_ratio(1.3);
      h.mutable_impact()->mutable_cost()->set_before("signing AES_128_GMAC");
    }
    return c;
  };
  ASSERT_TRUE(store_
                  ->CreateChange(applied(NewChange("chg-m", "alice", {"fs01", "fs02", "fs03"}),
                                         {{"fs01", kT0 - 100}, {"fs02", kT0 - 50}, {"fs03", kT0}}),
                                 {})
                  .ok());
  ASSERT_TRUE(store_
                  ->CreateChange(
                      applied(NewChange("chg-old", "alice", {"fs01"}), {{"fs01", kT0 - 9000}}), {})
                  .ok());
  auto measure = [&](const std::string& change, const std::string& host, double points) {
    v1::MeasuredImpact m;
    m.set_cpu_change_points(points);
    m.set_cpu_per_byte_ratio(1.4);
    m.set_prediction_known(true);
    m.set_predicted_cpu_ratio(1.3);
    auto wrote = store_->UpdateHostCounters(
        change, host,
        [&](const v1::Change&, const v1::ChangeHost&) -> absl::StatusOr<HostCounters> {
          HostCounters out;
          out.before = CounterWindowOf(kT0 - 1200, {10, 11});
          out.measured = m;
          return out;
        });
    EXPECT_TRUE(wrote.ok()) << wrote;
    return m;
  };
  const v1::MeasuredImpact fs01 = measure("chg-m", "fs01", 3.5);
  const v1::MeasuredImpact fs02 = measure("chg-m", "fs02", 2.0);
  measure("chg-old", "fs01", 9.0);

  auto got = store_->ListMeasuredChangeHosts(absl::FromUnixSeconds(kT0 - 3600), 10);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->truncated);
  ASSERT_EQ(got->hosts.size(), 2u);
  EXPECT_EQ(got->hosts[0].change_id, "chg-m");
  EXPECT_EQ(got->hosts[0].host.host(), "fs02");
  EXPECT_EQ(got->hosts[0].platform, v1::PLATFORM_UNSPECIFIED);
  EXPECT_EQ(Diff(fs02, got->hosts[0].host.measured()), "");
  EXPECT_EQ(got->hosts[1].host.host(), "fs01");
  EXPECT_EQ(got->hosts[1].platform, v1::PLATFORM_SAMBA);
  EXPECT_EQ(Diff(fs01, got->hosts[1].host.measured()), "");
  EXPECT_DOUBLE_EQ(got->hosts[1].host.impact().cost().cpu_ratio(), 1.3);
  EXPECT_EQ(got->hosts[1].host.impact().cost().before(), "signing AES_128_GMAC");
  EXPECT_FALSE(got->hosts[1].host.has_counters_before());  // the windows are not read

  auto first = store_->ListMeasuredChangeHosts(absl::FromUnixSeconds(kT0 - 3600), 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->truncated);
  ASSERT_EQ(first->hosts.size(), 1u);
  EXPECT_EQ(first->hosts[0].host.host(), "fs02");

  auto all = store_->ListMeasuredChangeHosts(absl::FromUnixSeconds(kT0 - 10000), 3);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_FALSE(all->truncated);
  ASSERT_EQ(all->hosts.size(), 3u);
  EXPECT_EQ(all->hosts[2].change_id, "chg-old");
  EXPECT_DOUBLE_EQ(all->hosts[2].host.measured().cpu_change_points(), 9.0);
}

v1::CostModelCalibration Calibration(const std::string& by, double factor) {
  v1::CostModelCalibration c;
  c.set_saved_by(by);
  *c.mutable_saved_at() = Ts(kT0);
  *c.mutable_since() = Ts(kT0 - 30 * 86400);
  c.set_truncated(true);
  c.set_input_count(2);
  auto* g = c.add_groups();
  g->set_platform("samba");
  g->set_protection_before("signing AES_128_GMAC");
  g->set_protection_after("encryption AES_128_GCM");
  g->set_changes(2);
  g->set_cpu_per_byte_pairs(2);
  g->set_suggested_cpu_per_byte_factor(factor);
  g->set_suggestion("x1.12 (2 changes)");
  for (const char* host : {"fs01", "fs02"}) {
    auto* in = c.add_inputs();
    in->set_change_id("chg-1");
    in->set_host(host);
    in->set_platform("samba");
    in->mutable_measured()->set_cpu_per_byte_ratio(1.4);
  }
  return c;
}

TEST_P(ChangeStoreConformanceTest, CalibrationsAreSavedWithTheirAuditEntryAndListedNewestFirst) {
  EXPECT_THAT(*store_->ListCostModelCalibrations(10), IsEmpty());
  v1::AuditEntry audit;
  audit.set_actor("carol");
  audit.set_action("cost_model_calibrated");
  audit.set_detail("1 host classes");
  auto first = store_->SaveCostModelCalibration(Calibration("carol", 1.12), audit);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = store_->SaveCostModelCalibration(Calibration("dave", 0.9), audit);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GT(*second, *first);

  auto listed = store_->ListCostModelCalibrations(10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  v1::CostModelCalibration want = Calibration("dave", 0.9);
  want.set_id(*second);
  want.clear_inputs();  // kept, not listed
  EXPECT_EQ(Diff(want, (*listed)[0]), "");
  EXPECT_EQ((*listed)[1].id(), *first);
  EXPECT_EQ((*listed)[1].saved_by(), "carol");
  ASSERT_EQ(store_->ListCostModelCalibrations(1)->size(), 1u);
  EXPECT_EQ((*store_->ListCostModelCalibrations(1))[0].id(), *second);

  auto entries = store_->ListAudit({});
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].action(), "cost_model_calibrated");
  EXPECT_EQ((*entries)[0].actor(), "carol");
  EXPECT_EQ((*entries)[0].detail(), absl::StrCat("1 host classes (calibration ", *first, ")"));

  // Who saved it is required.
  EXPECT_TRUE(absl::IsInvalidArgument(
      store_->SaveCostModelCalibration(Calibration("", 1.0), audit).status()));
}

TEST_P(ChangeStoreConformanceTest, HostStatusKeepsDesiredAndApplied) {
  v1::Change c = NewChange("chg-1", "alice", {"fs01", "fs02"});
  ASSERT_TRUE(store_->CreateChange(c, {}).ok());
  EXPECT_THAT(*store_->HostStatuses({"fs01", "fs02"}), IsEmpty());

  c.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(c, "fs01"), "n1", kT0 + 600);
  Dispatch(HostOf(c, "fs02"), "n2", kT0 + 600);
  ASSERT_TRUE(store_->UpdateChange("chg-1", Write(c, "dispatched")).ok());
  auto dispatched = store_->HostStatuses({"fs01", "fs02", "fs99"});
  ASSERT_TRUE(dispatched.ok()) << dispatched.status();
  ASSERT_EQ(dispatched->size(), 2u);  // fs99 never had a change
  EXPECT_EQ(dispatched->at("fs01").desired_change_id(), "chg-1");
  EXPECT_EQ(dispatched->at("fs01").desired_version(), 1u);
  EXPECT_EQ(dispatched->at("fs01").applied_change_id(), "");
  EXPECT_EQ(dispatched->at("fs01").last_result(), v1::HOST_CHANGE_STATE_UNSPECIFIED);
  auto drifting = store_->DriftedHosts(1);  // both desired, neither applied
  ASSERT_TRUE(drifting.ok()) << drifting.status();
  EXPECT_EQ(drifting->count, 2u);
  EXPECT_THAT(drifting->hosts, ElementsAre("fs01"));

  Ack(HostOf(c, "fs01"), v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 30);
  Ack(HostOf(c, "fs02"), v1::HOST_CHANGE_STATE_FAILED, "testparm rejected it", kT0 + 40);
  ASSERT_TRUE(store_->UpdateChange("chg-1", Write(c, "acked")).ok());
  auto acked = *store_->HostStatuses({"fs01", "fs02"});
  EXPECT_EQ(acked["fs01"].applied_change_id(), "chg-1");
  EXPECT_EQ(acked["fs01"].applied_version(), 1u);
  EXPECT_EQ(acked["fs01"].last_result(), v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(acked["fs01"].last_error(), "");
  EXPECT_EQ(acked["fs01"].last_ack_at().seconds(), kT0 + 30);
  EXPECT_EQ(acked["fs02"].desired_change_id(), "chg-1");
  EXPECT_EQ(acked["fs02"].applied_change_id(), "");  // desired but not applied
  EXPECT_EQ(acked["fs02"].last_result(), v1::HOST_CHANGE_STATE_FAILED);
  EXPECT_EQ(acked["fs02"].last_error(), "testparm rejected it");
  auto drifted = store_->DriftedHosts(10);  // fs01 applied what it should
  ASSERT_TRUE(drifted.ok()) << drifted.status();
  EXPECT_EQ(drifted->count, 1u);
  EXPECT_THAT(drifted->hosts, ElementsAre("fs02"));

  // The rollback is the new desired change of fs01; what it applied stays until it acks.
  v1::Change rollback = NewChange("chg-1-rb", "carol", {"fs01"});
  rollback.set_source(v1::CHANGE_SOURCE_ROLLBACK);
  rollback.set_rollback_of("chg-1");
  rollback.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(rollback, "fs01"), "n3", kT0 + 900);
  c.set_state(v1::CHANGE_STATE_ROLLED_BACK);
  c.set_rolled_back_by("chg-1-rb");
  ASSERT_TRUE(store_
                  ->UpdateChange("chg-1",
                                 [&](const v1::Change&) -> absl::StatusOr<ChangeUpdate> {
                                   ChangeUpdate u;
                                   u.change = c;
                                   u.created = rollback;
                                   return u;
                                 })
                  .ok());
  auto rolled = *store_->HostStatuses({"fs01"});
  EXPECT_EQ(rolled["fs01"].desired_change_id(), "chg-1-rb");
  EXPECT_EQ(rolled["fs01"].applied_change_id(), "chg-1");
}

TEST_P(ChangeStoreConformanceTest, PendingForHostHasOnlyDispatchedUnexpiredOrders) {
  const absl::Time now = absl::FromUnixSeconds(kT0 + 60);
  v1::Change first = NewChange("chg-1", "alice", {"fs01", "fs02"});
  first.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(first, "fs01"), "n1", kT0 + 600);  // fs02 stays PENDING
  v1::Change expired = NewChange("chg-2", "alice", {"fs01"});
  expired.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(expired, "fs01"), "n2", kT0 + 30);
  v1::Change acked = NewChange("chg-3", "alice", {"fs01"});
  acked.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(acked, "fs01"), "n3", kT0 + 600);
  Ack(HostOf(acked, "fs01"), v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 10);
  v1::Change second = NewChange("chg-4", "alice", {"fs01"});
  second.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(second, "fs01"), "n4", kT0 + 600);
  for (const auto* c : {&first, &expired, &acked, &second}) {
    ASSERT_TRUE(store_->CreateChange(*c, {}).ok()) << c->id();
  }

  auto pending = store_->PendingForHost("fs01", now);
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ((*pending)[0].id(), "chg-1");  // oldest first
  EXPECT_EQ((*pending)[1].id(), "chg-4");
  ASSERT_EQ((*pending)[0].hosts_size(), 1);  // only the asking host
  EXPECT_EQ(Diff(*HostOf(first, "fs01"), (*pending)[0].hosts(0)), "");
  EXPECT_EQ((*pending)[0].content_hash(), "hash-chg-1");
  EXPECT_THAT(*store_->PendingForHost("fs02", now), IsEmpty());
  EXPECT_THAT(*store_->PendingForHost("fs01", absl::FromUnixSeconds(kT0 + 600)), IsEmpty());
}

TEST_P(ChangeStoreConformanceTest, PendingForHostsReadsManyHostsAsPendingForHostDoes) {
  const absl::Time now = absl::FromUnixSeconds(kT0 + 60);
  v1::Change first = NewChange("chg-1", "alice", {"fs01", "fs02", "fs03"});
  first.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(first, "fs01"), "n1", kT0 + 600);
  Dispatch(HostOf(first, "fs02"), "n2", kT0 + 600);  // fs03 stays PENDING
  v1::Change expired = NewChange("chg-2", "alice", {"fs01", "fs02"});
  expired.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(expired, "fs01"), "n3", kT0 + 30);
  Dispatch(HostOf(expired, "fs02"), "n4", kT0 + 30);
  v1::Change acked = NewChange("chg-3", "alice", {"fs02"});
  acked.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(acked, "fs02"), "n5", kT0 + 600);
  Ack(HostOf(acked, "fs02"), v1::HOST_CHANGE_STATE_APPLIED, "", kT0 + 10);
  v1::Change second = NewChange("chg-4", "alice", {"fs02", "fs04"});
  second.set_state(v1::CHANGE_STATE_ROLLING_OUT);
  Dispatch(HostOf(second, "fs02"), "n6", kT0 + 600);
  Dispatch(HostOf(second, "fs04"), "n7", kT0 + 600);
  for (const auto* c : {&first, &expired, &acked, &second}) {
    ASSERT_TRUE(store_->CreateChange(*c, {}).ok()) << c->id();
  }

  // fs04 is not asked for, fs03 has nothing pending, fs09 is in no change.
  auto pending = store_->PendingForHosts({"fs01", "fs02", "fs03", "fs09"}, now);
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_EQ(pending->size(), 2u);
  ASSERT_EQ(pending->count("fs01"), 1u);
  ASSERT_EQ(pending->count("fs02"), 1u);
  const std::vector<v1::Change>& fs02 = pending->at("fs02");
  ASSERT_EQ(fs02.size(), 2u);
  EXPECT_EQ(fs02[0].id(), "chg-1");  // oldest first
  EXPECT_EQ(fs02[1].id(), "chg-4");
  // Each one as PendingForHost has it: the whole change with only that host.
  for (const std::string host : {"fs01", "fs02"}) {
    auto one = store_->PendingForHost(host, now);
    ASSERT_TRUE(one.ok()) << one.status();
    const std::vector<v1::Change>& many = pending->at(host);
    ASSERT_EQ(many.size(), one->size()) << host;
    for (size_t i = 0; i < many.size(); ++i) {
      EXPECT_EQ(Diff((*one)[i], many[i]), "") << host << " " << i;
      ASSERT_EQ(many[i].hosts_size(), 1);
      EXPECT_EQ(many[i].hosts(0).host(), host);
    }
  }
  EXPECT_EQ(Diff(*HostOf(second, "fs02"), fs02[1].hosts(0)), "");
  EXPECT_THAT(*store_->PendingForHosts({}, now), IsEmpty());
  EXPECT_THAT(*store_->PendingForHosts({"fs01", "fs02"}, absl::FromUnixSeconds(kT0 + 600)),
              IsEmpty());
}

TEST_P(ChangeStoreConformanceTest, LiveChangesAreApprovedRollingOutOrHalted) {
  const std::vector<std::pair<std::string, v1::ChangeState>> states = {
      {"p", v1::CHANGE_STATE_PROPOSED},    {"a", v1::CHANGE_STATE_APPROVED},
      {"r", v1::CHANGE_STATE_ROLLING_OUT}, {"h", v1::CHANGE_STATE_HALTED},
      {"c", v1::CHANGE_STATE_COMPLETED},   {"x", v1::CHANGE_STATE_REJECTED},
      {"b", v1::CHANGE_STATE_ROLLED_BACK}, {"e", v1::CHANGE_STATE_EXPIRED}};
  for (const auto& [id, state] : states) {
    v1::Change c = NewChange(id, "alice", {"fs01"});
    c.set_state(state);
    ASSERT_TRUE(store_->CreateChange(c, {}).ok()) << id;
  }
  auto live = store_->LiveChangeIds();
  ASSERT_TRUE(live.ok()) << live.status();
  std::vector<std::string> ids = *live;
  std::sort(ids.begin(), ids.end());
  EXPECT_THAT(ids, ElementsAre("a", "h", "r"));
}

TEST_P(ChangeStoreConformanceTest, AuditIsAppendedInOrderAndReadWithFiltersAndPages) {
  v1::AuditEntry stamped = Audit("carol", "approved", "chg-1");
  *stamped.mutable_at() = Ts(kT0);
  stamped.set_reason("looks right");
  stamped.set_content_hash("abc");
  stamped.set_detail("1 of 2");
  v1::AuditEntry waiver = Audit("bob", "waiver_requested", "");
  waiver.set_waiver_id("w1");
  ASSERT_TRUE(store_
                  ->AppendAudit({Audit("alice", "proposed", "chg-1"), stamped,
                                 Audit("alice", "proposed", "chg-2"), waiver,
                                 Audit("fs01", "acked", "chg-1")})
                  .ok());
  auto all = store_->ListAudit({});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  for (size_t i = 1; i < all->size(); ++i) EXPECT_GT((*all)[i].seq(), (*all)[i - 1].seq());
  EXPECT_GT((*all)[0].at().seconds(), 0);  // the store stamps an entry without a time
  v1::AuditEntry expected = stamped;
  expected.set_seq((*all)[1].seq());
  EXPECT_EQ(Diff(expected, (*all)[1]), "");

  AuditQuery by_change;
  by_change.change_id = "chg-1";
  EXPECT_THAT(Actions(*store_, by_change), ElementsAre("proposed", "approved", "acked"));
  AuditQuery by_waiver;
  by_waiver.waiver_id = "w1";
  ASSERT_EQ(store_->ListAudit(by_waiver)->size(), 1u);

  AuditQuery page;
  page.after_seq = (*all)[1].seq();
  page.limit = 2;
  auto next = *store_->ListAudit(page);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].seq(), (*all)[2].seq());
  EXPECT_EQ(next[1].seq(), (*all)[3].seq());
}

TEST_P(ChangeStoreConformanceTest, WaiversAreRequestedApprovedByAnotherRevokedAndExpire) {
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  v1::Waiver w;
  w.set_id("w1");
  w.set_rule_id("smb1-server-disabled");
  w.set_host("fs01");
  w.set_justification("legacy scanner until March");
  w.set_ticket("CHG-1234");
  w.set_created_by("bob");
  *w.mutable_created_at() = TsOf(now - absl::Hours(1));
  *w.mutable_expires_at() = TsOf(now + absl::Hours(24));
  w.set_state(v1::WAIVER_STATE_REQUESTED);
  v1::AuditEntry requested = Audit("bob", "waiver_requested", "");
  requested.set_waiver_id("w1");
  ASSERT_TRUE(store_->CreateWaiver(w, requested).ok());
  EXPECT_EQ(store_->CreateWaiver(w, requested).code(), absl::StatusCode::kAlreadyExists);

  auto active = [&]() -> std::vector<std::string> {
    std::vector<std::string> ids;
    if (under_test_.compliance == nullptr) return ids;
    auto waivers = under_test_.compliance->ActiveWaivers();
    EXPECT_TRUE(waivers.ok()) << waivers.status();
    for (const auto& x : *waivers) ids.push_back(x.id());
    return ids;
  };
  auto listed = [&](bool inactive, absl::Time at) {
    std::vector<std::string> out;
    auto waivers = store_->ListWaivers(inactive, at);
    EXPECT_TRUE(waivers.ok()) << waivers.status();
    if (!waivers.ok()) return out;
    for (const auto& x : *waivers) {
      out.push_back(absl::StrCat(x.id(), ":", v1::WaiverState_Name(x.state())));
    }
    return out;
  };
  EXPECT_THAT(active(), IsEmpty());
  EXPECT_THAT(listed(false, now), IsEmpty());
  EXPECT_THAT(listed(true, now), ElementsAre("w1:WAIVER_STATE_REQUESTED"));

  auto approve = [&](const std::string& who) -> ChangeStore::WaiverStepFn {
    return [who, now](
               const v1::Waiver& current) -> absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>> {
      v1::Waiver next = current;
      next.set_state(v1::WAIVER_STATE_APPROVED);
      next.set_approved_by(who);
      *next.mutable_approved_at() = TsOf(now);
      v1::AuditEntry e = Audit(who, "waiver_approved", "");
      e.set_waiver_id(current.id());
      return std::make_pair(next, e);
    };
  };
  auto own = store_->UpdateWaiver("w1", approve("bob"));
  EXPECT_EQ(own.status().code(), absl::StatusCode::kFailedPrecondition) << own.status();
  EXPECT_THAT(own.status().message(), HasSubstr("bob"));
  EXPECT_THAT(listed(true, now), ElementsAre("w1:WAIVER_STATE_REQUESTED"));
  EXPECT_EQ(store_->UpdateWaiver("w-none", approve("carol")).status().code(),
            absl::StatusCode::kNotFound);

  auto approved = store_->UpdateWaiver("w1", approve("carol"));
  ASSERT_TRUE(approved.ok()) << approved.status();
  EXPECT_EQ(approved->state(), v1::WAIVER_STATE_APPROVED);
  EXPECT_THAT(active(), ElementsAre("w1"));
  auto stored = *store_->ListWaivers(false, now);
  ASSERT_EQ(stored.size(), 1u);
  v1::Waiver expected = w;
  expected.set_state(v1::WAIVER_STATE_APPROVED);
  expected.set_approved_by("carol");
  *expected.mutable_approved_at() = TsOf(now);
  EXPECT_EQ(Diff(expected, stored[0]), "");
  EXPECT_THAT(listed(false, now + absl::Hours(25)), IsEmpty());
  EXPECT_THAT(listed(true, now + absl::Hours(25)), ElementsAre("w1:WAIVER_STATE_EXPIRED"));

  // Approved but already past its expiry: never applies.
  v1::Waiver old = w;
  old.set_id("w2");
  *old.mutable_created_at() = TsOf(now - absl::Hours(48));
  *old.mutable_expires_at() = TsOf(now - absl::Hours(24));
  v1::AuditEntry requested_old = requested;
  requested_old.set_waiver_id("w2");
  ASSERT_TRUE(store_->CreateWaiver(old, requested_old).ok());
  ASSERT_TRUE(store_->UpdateWaiver("w2", approve("carol")).ok());
  EXPECT_THAT(active(), ElementsAre("w1"));
  EXPECT_THAT(listed(true, now),
              ElementsAre("w1:WAIVER_STATE_APPROVED", "w2:WAIVER_STATE_EXPIRED"));

  auto revoked = store_->UpdateWaiver(
      "w1",
      [&](const v1::Waiver& current) -> absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>> {
        v1::Waiver next = current;
        next.set_state(v1::WAIVER_STATE_REVOKED);
        next.set_revoked_by("dave");
        *next.mutable_revoked_at() = TsOf(now);
        next.set_revoke_reason("scanner replaced");
        v1::AuditEntry e = Audit("dave", "waiver_revoked", "");
        e.set_waiver_id("w1");
        return std::make_pair(next, e);
      });
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_THAT(active(), IsEmpty());
  EXPECT_THAT(listed(false, now), IsEmpty());
  EXPECT_THAT(listed(true, now), ElementsAre("w1:WAIVER_STATE_REVOKED", "w2:WAIVER_STATE_EXPIRED"));

  AuditQuery q;
  q.waiver_id = "w1";
  EXPECT_THAT(Actions(*store_, q),
              ElementsAre("waiver_requested", "waiver_approved", "waiver_revoked"));
}

}  // namespace
}  // namespace smbfleet::collector::store_testing
