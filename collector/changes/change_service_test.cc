// The change workflow over the in-memory stores, a fake clock and a fake stream registry:
// propose, four-eyes approval, dispatch over the stream, acks, halts, resume, rollback, expiry,
// refusal events, audit and waivers.
#include "collector/changes/change_service.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collector/changes/approval_payload.h"
#include "collector/changes/order_dispatcher.h"
#include "collector/ingest/pipeline.h"
#include "collector/metrics/prometheus_text.h"
#include "collector/store/memory/memory_approver_key_store.h"
#include "collector/store/memory/memory_change_store.h"
#include "collector/store/memory/memory_enrollment_store.h"
#include "collector/store/memory/memory_store.h"
#include "collector/testing/test_policy.h"
#include "common/approval_signing.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace smbfleet::collector::changes {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class FakeRouter : public PushRouter {
 public:
  bool Send(const std::string& host, const v1::WatchResponse& message) override {
    if (!Connected(host)) return false;
    sent[host].push_back(message);
    return true;
  }
  bool Connected(const std::string& host) const override { return connected.count(host) > 0; }

  std::set<std::string> connected;
  std::map<std::string, std::vector<v1::WatchResponse>> sent;
};

// The memory store, counting workflow steps (whole-change and host-scoped); with `hold` set, the
// next step waits until it is cleared (so that acks arrive while a step runs).
class GatedChangeStore : public MemoryChangeStore {
 public:
  using MemoryChangeStore::MemoryChangeStore;
  absl::StatusOr<v1::Change> UpdateChange(const std::string& id, const StepFn& step) override {
    Gate(/*whole=*/true);
    return MemoryChangeStore::UpdateChange(id, [&](const v1::Change& current) {
      absl::StatusOr<ChangeUpdate> u = step(current);
      if (u.ok() && u->change.hosts_size() == current.hosts_size()) {
        int moved = 0;
        for (int i = 0; i < current.hosts_size(); ++i) {
          moved += u->change.hosts(i).state() != current.hosts(i).state() ? 1 : 0;
        }
        absl::MutexLock lock(&mu);
        whole_moved.push_back(moved);
      }
      return u;
    });
  }
  absl::Status UpdateChangeHosts(const std::string& id, const std::vector<std::string>& hosts,
                                 const HostsStepFn& step) override {
    Gate(/*whole=*/false);
    {
      absl::MutexLock lock(&mu);
      if (hosts.size() > 1 && failing_batches > 0) {
        --failing_batches;
        return absl::UnavailableError("the database went away");
      }
    }
    return MemoryChangeStore::UpdateChangeHosts(id, hosts, step);
  }

  int WholeSteps() {
    absl::MutexLock lock(&mu);
    return whole_steps;
  }

  absl::Mutex mu;
  int steps ABSL_GUARDED_BY(mu) = 0;
  int whole_steps ABSL_GUARDED_BY(mu) = 0;  // UpdateChange
  bool hold ABSL_GUARDED_BY(mu) = false;
  bool held ABSL_GUARDED_BY(mu) = false;  // a step is waiting on `hold`
  // The next this many host-scoped steps of more than one host fail, writing nothing.
  int failing_batches ABSL_GUARDED_BY(mu) = 0;
  // Per whole-change step that succeeded: how many hosts it moved to another state.
  std::vector<int> whole_moved ABSL_GUARDED_BY(mu);

 private:
  void Gate(bool whole) {
    absl::MutexLock lock(&mu);
    ++steps;
    whole_steps += whole ? 1 : 0;
    if (hold) {
      held = true;
      mu.Await(absl::Condition(
          +[](bool* h) { return !*h; }, &hold));
    }
  }
};

class ChangeServiceTest : public ::testing::Test {
 protected:
  ChangeServiceTest() {
    service_.SetOrderSignal(&signal_);
    service_.SetApproverKeys(&keys_);
    pipeline_.SetRefusalObserver(&service_);
    pipeline_.SetChangeCountersSink(&service_);
  }

  // Each person's Ed25519 key, made and registered under their name on first use.
  const Ed25519Key& KeyOf(const std::string& name) {
    auto it = people_keys_.find(name);
    if (it != people_keys_.end()) return it->second;
    auto key = GenerateEd25519Key();
    EXPECT_TRUE(key.ok()) << key.status();
    v1::ApproverKey registered;
    registered.set_name(name);
    registered.set_key_id(KeyId(key->public_raw));
    registered.set_public_key(key->public_raw);
    registered.set_added_by("root");
    EXPECT_TRUE(keys_.AddKey(registered).ok());
    return people_keys_.emplace(name, *std::move(key)).first->second;
  }

  // `name`'s signature over change `id` as stored now (as smbfleetctl makes it from GetChange).
  v1::OrderSignature SignedBy(const std::string& name, const std::string& id) {
    const Ed25519Key& key = KeyOf(name);
    v1::OrderSignature sig;
    sig.set_approver(name);
    sig.set_key_id(KeyId(key.public_raw));
    auto stored = changes_.GetChange(id);
    std::string payload = "no such change";
    if (stored.ok() && stored->has_value()) {
      auto bytes = ApprovalPayloadBytes(**stored);
      EXPECT_TRUE(bytes.ok()) << bytes.status();
      if (bytes.ok()) payload = *bytes;
    }
    auto signature = SignEd25519(key.private_pem, payload);
    EXPECT_TRUE(signature.ok()) << signature.status();
    sig.set_signature(signature.ok() ? *signature : "");
    return sig;
  }

  // A report of `name`; `guest_session`: a client that requiring signing would refuse.
  void Report(const std::string& name, bool require_signing = false, bool hr_encrypted = true,
              bool guest_session = false, std::map<std::string, std::string> labels = {},
              std::vector<v1::Event> events = {}) {
    v1::ReportRequest r;
    r.set_report_id(
        absl::StrCat("00000000-0000-4000-8000-", absl::Dec(++reports_, absl::kZeroPad12)));
    v1::Posture* p = r.mutable_posture();
    p->mutable_host()->set_hostname(name);
    for (const auto& [k, v] : labels) (*p->mutable_host()->mutable_labels())[k] = v;
    p->mutable_server()->set_require_signing(require_signing);
    p->mutable_server()->set_encrypt_data(false);
    auto* hr = p->add_shares();
    hr->set_name("hr");
    hr->set_path("/srv/hr");
    hr->set_encrypt_data(hr_encrypted);
    if (guest_session) {
      auto* s = p->add_sessions();
      s->set_session_id("7");
      s->set_client_name("KIOSK");
      s->set_client_address("10.0.0.7");
      s->set_guest(true);
      s->set_dialect(v1::DIALECT_SMB_3_1_1);
    }
    for (auto& e : events) *p->add_events() = std::move(e);
    for (auto& c : next_counters_) *r.add_change_counters() = std::move(c);
    next_counters_.clear();
    for (const auto& b : benchmarks_) *p->add_benchmarks() = b;
    auto result = pipeline_.Ingest(name, r);
    ASSERT_TRUE(result.ok()) << result.status();
  }

  v1::Change ProposeHosts(std::vector<std::string> hosts) {
    v1::ProposeChangeRequest req;
    for (auto& h : hosts) req.add_hosts(h);
    req.set_reason("harden");
    auto r = service_.Propose(pat_, req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->change() : v1::Change();
  }

  absl::StatusOr<v1::ApproveChangeResponse> ApproveBy(const Actor& who, const std::string& id,
                                                      v1::RolloutOptions rollout = {}) {
    v1::ApproveChangeRequest req;
    req.set_id(id);
    req.set_comment("ok");
    *req.mutable_rollout() = std::move(rollout);
    *req.mutable_signature() = SignedBy(who.name, id);
    return service_.Approve(who, req);
  }

  v1::Change Get(const std::string& id) {
    auto c = changes_.GetChange(id);
    EXPECT_TRUE(c.ok() && c->has_value());
    return c.ok() && c->has_value() ? **c : v1::Change();
  }

  const v1::ChangeHost& HostOf(const v1::Change& c, const std::string& host) {
    for (const auto& h : c.hosts()) {
      if (h.host() == host) return h;
    }
    ADD_FAILURE() << "no host " << host;
    return c.hosts(0);
  }

  // The host's ack of its order of change `id`.
  absl::Status AckAs(const std::string& host, const std::string& id,
                     v1::AckChangeRequest::Result result,
                     std::vector<v1::SettingChange> before = {}, const std::string& message = "") {
    v1::Change c = Get(id);
    v1::AckChangeRequest ack;
    ack.set_change_id(id);
    ack.set_version(c.version());
    ack.set_nonce(HostOf(c, host).nonce());
    ack.set_result(result);
    ack.set_message(message);
    for (auto& b : before) *ack.add_before() = std::move(b);
    return service_.Ack(host, ack).status();
  }

  std::vector<std::string> AuditActions(const std::string& id) {
    AuditQuery q;
    q.change_id = id;
    std::vector<std::string> out;
    auto entries = changes_.ListAudit(q);
    EXPECT_TRUE(entries.ok());
    for (const auto& e : entries.value()) out.push_back(e.action());
    return out;
  }

  std::vector<std::string> OrdersSentTo(const std::string& host) {
    std::vector<std::string> out;
    for (const auto& m : router_.sent[host]) {
      if (m.has_change_order()) out.push_back(m.change_order().change_id());
    }
    return out;
  }

  // The host's own order a v2 order carries, after checking its inclusion proof against the
  // signed tree head.
  static v1::HostOrder SignedHostOrder(const v1::ChangeOrder& order) {
    v1::HostOrder mine;
    auto payload = ParseApprovalPayload(order.approval_payload());
    EXPECT_TRUE(payload.ok()) << payload.status();
    if (!payload.ok()) return mine;
    const std::vector<std::string> proof(order.host_proof().begin(), order.host_proof().end());
    EXPECT_TRUE(
        VerifyHostOrderInclusion(*payload, order.host_order(), order.host_index(), proof).ok());
    EXPECT_TRUE(mine.ParseFromString(order.host_order()));
    return mine;
  }

  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::function<absl::Time()> clock_ = [this] { return now_; };
  policy::Policy policy_ = collector::testing::PlanningPolicy();
  MemoryHostStore hosts_;
  MemoryComplianceStore compliance_{&hosts_};
  GatedChangeStore changes_{&compliance_};
  MemoryApproverKeyStore keys_;
  std::map<std::string, Ed25519Key> people_keys_;
  ReportPipeline pipeline_{&hosts_, &compliance_, &policy_, clock_};
  ChangeService service_{&changes_, &hosts_, &compliance_, &policy_, ChangeOptions{}, clock_};
  FakeRouter router_;
  OrderDispatcher dispatcher_{&changes_, &router_, clock_};
  LocalOrderSignal signal_{
      [this](const std::vector<std::string>& hosts) { dispatcher_.HostsHaveOrders(hosts); }};
  Actor pat_{"pat", Role::kProposer};
  Actor ann_{"ann", Role::kApprover};
  Actor bob_{"bob", Role::kApprover};
  Actor vic_{"vic", Role::kViewer};
  int reports_ = 0;
  std::vector<v1::ChangeCounters> next_counters_;  // sent with the next Report
  std::vector<v1::Benchmark> benchmarks_;          // sent with every Report
};

TEST_F(ChangeServiceTest, ProposeByHostStoresThePlanWithExpectedAndRollbackValues) {
  Report("fs1", false, false);
  v1::Change c = ProposeHosts({"fs1"});
  ASSERT_EQ(c.hosts_size(), 1);
  EXPECT_EQ(c.state(), v1::CHANGE_STATE_PROPOSED);
  EXPECT_EQ(c.source(), v1::CHANGE_SOURCE_HOSTS);
  EXPECT_EQ(c.proposed_by(), "pat");
  EXPECT_EQ(c.content_hash().size(), 64u);
  EXPECT_EQ(c.approvals_required(), 1u);
  EXPECT_EQ(c.policy_name(), "baseline");
  std::map<std::string, v1::PlanStep> steps;
  for (const auto& s : c.hosts(0).steps()) steps[s.setting()] = s;
  ASSERT_EQ(steps.count("server.requireSigning"), 1u);
  EXPECT_EQ(steps["server.requireSigning"].expected_current(), "false");
  EXPECT_EQ(steps["server.requireSigning"].value(), "true");
  EXPECT_EQ(steps["server.requireSigning"].rollback_value(), "false");
  ASSERT_EQ(steps.count("share.encryptData"), 1u);
  EXPECT_EQ(steps["share.encryptData"].share(), "hr");
  EXPECT_EQ(Get(c.id()).hosts_size(), 1);
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed"));
}

TEST_F(ChangeServiceTest, ProposeByRuleAndLabelKeepsOnlyThatRulesSteps) {
  Report("fs1", false, false, false, {{"site", "ams"}});
  Report("fs2", true, false, false, {{"site", "ams"}});   // compliant on the rule
  Report("fs3", false, false, false, {{"site", "fra"}});  // other site
  v1::ProposeChangeRequest req;
  req.set_rule_id("server-signing-required");
  (*req.mutable_labels())["site"] = "ams";
  auto r = service_.Propose(pat_, req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->change().hosts_size(), 1);
  EXPECT_EQ(r->change().hosts(0).host(), "fs1");
  ASSERT_EQ(r->change().hosts(0).steps_size(), 1);
  EXPECT_EQ(r->change().hosts(0).steps(0).setting(), "server.requireSigning");
  EXPECT_EQ(r->change().source(), v1::CHANGE_SOURCE_RULE);

  req.set_rule_id("no-such-rule");
  auto bad = service_.Propose(pat_, req);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("no-such-rule"));
}

// With the collector's labels in use, a label selector picks hosts by their trusted labels: a
// host that reports site=ams but was enrolled into fra is not an ams target, and the change
// records the trusted labels (its maintenance windows go by them).
TEST_F(ChangeServiceTest, LabelSelectorUsesTrustedLabelsNotReportedOnes) {
  MemoryEnrollmentStore trusted;
  service_.SetTrustedLabels(&trusted);
  ASSERT_TRUE(trusted.SetHostLabels("fs1", {{"site", "fra"}}, "root", absl::Now()).ok());
  ASSERT_TRUE(trusted.SetHostLabels("fs3", {{"site", "ams"}}, "root", absl::Now()).ok());
  Report("fs1", false, false, false, {{"site", "ams"}});  // claims ams
  Report("fs3", false, false, false, {{"site", "fra"}});  // claims fra
  v1::ProposeChangeRequest req;
  req.set_rule_id("server-signing-required");
  (*req.mutable_labels())["site"] = "ams";
  auto r = service_.Propose(pat_, req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->change().hosts_size(), 1);
  EXPECT_EQ(r->change().hosts(0).host(), "fs3");
  EXPECT_EQ(r->change().hosts(0).labels().at("site"), "ams");
}

TEST_F(ChangeServiceTest, ProposeTypedSettingsValidatesNameTypeAndShare) {
  Report("fs1", true, false);
  v1::ProposeChangeRequest req;
  req.add_hosts("fs1");
  auto* s = req.add_settings();
  s->set_setting("share.encryptData");
  s->set_share("hr");
  s->set_value("true");
  auto r = service_.Propose(pat_, req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->change().hosts(0).steps_size(), 1);
  EXPECT_EQ(r->change().hosts(0).steps(0).expected_current(), "false");
  EXPECT_EQ(r->change().hosts(0).steps(0).rollback_value(), "false");
  EXPECT_EQ(r->change().source(), v1::CHANGE_SOURCE_SETTINGS);

  struct Bad {
    std::string setting, share, value, field;
  };
  for (const Bad& b : {Bad{"server.noSuchThing", "", "true", "settings[0].setting"},
                       Bad{"server.requireSigning", "", "maybe", "settings[0].value"},
                       Bad{"share.encryptData", "../etc", "true", "settings[0].share"},
                       Bad{"share.encryptData", "nope", "true", "no share 'nope'"}}) {
    s->set_setting(b.setting);
    s->set_share(b.share);
    s->set_value(b.value);
    auto bad = service_.Propose(pat_, req);
    EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << b.field << ": " << bad.status();
    EXPECT_THAT(bad.status().message(), HasSubstr(b.field));
  }
  EXPECT_EQ(changes_.ListChanges({})->size(), 1u);  // only the good one
}

TEST_F(ChangeServiceTest, CompliantHostIsSkippedAndNothingLeftIsRefused) {
  Report("fs1", true, true);
  Report("fs2", false, true);
  v1::ProposeChangeRequest req;
  req.add_hosts("fs1");
  req.add_hosts("fs2");
  auto r = service_.Propose(pat_, req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->change().hosts_size(), 1);
  EXPECT_THAT(r->skipped(), ElementsAre(HasSubstr("fs1: compliant")));

  v1::ProposeChangeRequest only;
  only.add_hosts("fs1");
  auto none = service_.Propose(pat_, only);
  EXPECT_TRUE(absl::IsFailedPrecondition(none.status())) << none.status();
  EXPECT_THAT(none.status().message(), HasSubstr("nothing to change: fs1: compliant"));
  EXPECT_EQ(changes_.ListChanges({})->size(), 1u);

  v1::ProposeChangeRequest unknown;
  unknown.add_hosts("ghost");
  auto nf = service_.Propose(pat_, unknown);
  EXPECT_TRUE(absl::IsNotFound(nf.status()));
  EXPECT_THAT(nf.status().message(), HasSubstr("'ghost'"));
  EXPECT_TRUE(absl::IsPermissionDenied(service_.Propose(vic_, only).status()));
}

TEST_F(ChangeServiceTest, OwnApprovalAndViewerAreRefused) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  Actor pat_as_approver{"pat", Role::kApprover};
  auto own = ApproveBy(pat_as_approver, c.id());
  EXPECT_TRUE(absl::IsFailedPrecondition(own.status())) << own.status();
  EXPECT_TRUE(absl::IsPermissionDenied(ApproveBy(vic_, c.id()).status()));
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_PROPOSED);
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed"));  // refusals are not steps
  EXPECT_TRUE(absl::IsNotFound(ApproveBy(ann_, "no-such-change").status()));
}

TEST_F(ChangeServiceTest, ImpactNamingAClientNeedsTwoApprovers) {
  Report("fs1", false, true, /*guest_session=*/true);
  v1::Change c = ProposeHosts({"fs1"});
  EXPECT_EQ(c.approvals_required(), 2u);
  ASSERT_EQ(c.impact().refused_clients(), 1u);
  EXPECT_EQ(c.impact().clients(0).client_name(), "KIOSK");
  router_.connected = {"fs1"};
  auto first = ApproveBy(ann_, c.id());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->approvals(), 1u);
  EXPECT_EQ(first->change().state(), v1::CHANGE_STATE_PROPOSED);
  EXPECT_THAT(OrdersSentTo("fs1"), IsEmpty());
  auto again = ApproveBy(ann_, c.id());  // the same person again does not count
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->approvals(), 1u);
  auto second = ApproveBy(bob_, c.id());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->change().state(), v1::CHANGE_STATE_ROLLING_OUT);
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id()));
}

TEST_F(ChangeServiceTest, StalePlanIsRefusedNamingHostAndSetting) {
  Report("fs1", false, true);
  v1::Change c = ProposeHosts({"fs1"});
  Report("fs1", true, true);  // someone fixed it by hand meanwhile
  auto r = ApproveBy(ann_, c.id());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("fs1"));
  EXPECT_THAT(r.status().message(), HasSubstr("server.requireSigning"));
  EXPECT_EQ(Get(c.id()).approvals_size(), 0);
}

TEST_F(ChangeServiceTest, MalformedWaveSpecNamesIt) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  v1::RolloutOptions o;
  o.set_waves("50%,10%");
  auto r = ApproveBy(ann_, c.id(), o);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("50%,10%"));
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_PROPOSED);
}

TEST_F(ChangeServiceTest, ApprovalDispatchesOverTheStreamWithinTheCall) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  router_.connected = {"fs1"};
  auto r = ApproveBy(ann_, c.id());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(router_.sent["fs1"].size(), 1u);
  const v1::ChangeOrder& order = router_.sent["fs1"][0].change_order();
  EXPECT_EQ(order.change_id(), c.id());
  EXPECT_EQ(order.version(), 1u);
  EXPECT_EQ(order.nonce().size(), 32u);
  EXPECT_EQ(TimeUtil::TimestampToSeconds(order.not_after()),
            absl::ToUnixSeconds(now_ + absl::Minutes(15)));
  EXPECT_EQ(order.reason(), "harden");
  ASSERT_GE(order.settings_size(), 1);
  EXPECT_FALSE(order.settings(0).expected_current().empty());
  EXPECT_EQ(HostOf(Get(c.id()), "fs1").state(), v1::HOST_CHANGE_STATE_DISPATCHED);
  auto status = changes_.HostStatuses({"fs1"});
  EXPECT_EQ(status->at("fs1").desired_change_id(), c.id());
}

TEST_F(ChangeServiceTest, EachHostsOrderCarriesOnlyItsOwnSignedOrderAndProof) {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back(absl::StrCat("fs", i));
    Report(names.back());
  }
  v1::Change c = ProposeHosts(names);
  ASSERT_EQ(c.hosts_size(), 40);
  router_.connected = {names.begin(), names.end()};
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  if (c.approvals_required() > 1) {
    ASSERT_TRUE(ApproveBy(bob_, c.id()).ok());
  }
  size_t sent = 0;
  for (const std::string& name : names) {
    for (const auto& m : router_.sent[name]) {
      if (!m.has_change_order()) continue;
      ++sent;
      const v1::ChangeOrder& order = m.change_order();
      auto payload = ParseApprovalPayload(order.approval_payload());
      ASSERT_TRUE(payload.ok()) << payload.status();
      EXPECT_EQ(payload->hosts_size(), 0);  // no other host's settings travel with it
      EXPECT_EQ(payload->host_count(), 40U);
      EXPECT_LE(order.host_proof_size(), 6);  // log2(40), rounded up
      EXPECT_EQ(SignedHostOrder(order).host(), name);
    }
  }
  EXPECT_GT(sent, 0U);  // the first wave
}

TEST_F(ChangeServiceTest, AgentConnectingLaterGetsPendingOrdersButNotCompletedOnes) {
  Report("fs1");
  v1::Change a = ProposeHosts({"fs1"});
  ASSERT_TRUE(ApproveBy(ann_, a.id()).ok());
  v1::ProposeChangeRequest req;
  req.add_hosts("fs1");
  auto* s = req.add_settings();
  s->set_setting("server.smb1Enabled");
  s->set_value("false");
  auto b = service_.Propose(pat_, req);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(ApproveBy(ann_, b->change().id()).ok());
  EXPECT_THAT(OrdersSentTo("fs1"), IsEmpty());  // offline at approval

  router_.connected = {"fs1"};
  EXPECT_EQ(dispatcher_.Connected("fs1", {a.id()}), 1u);
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(b->change().id()));
  router_.sent.clear();
  EXPECT_EQ(dispatcher_.Connected("fs1", {}), 2u);
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(a.id(), b->change().id()));
}

TEST_F(ChangeServiceTest, AppliedAckCompletesAndIsIdempotent) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_COMPLETED);
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());  // again
  EXPECT_THAT(AuditActions(c.id()),
              ElementsAre("proposed", "approved", "dispatched", "acked", "completed"));
  auto status = changes_.HostStatuses({"fs1"})->at("fs1");
  EXPECT_EQ(status.applied_change_id(), c.id());
  EXPECT_EQ(status.last_result(), v1::HOST_CHANGE_STATE_APPLIED);

  // Not the order sent: wrong nonce, unknown change, a host the change does not target.
  v1::AckChangeRequest wrong;
  wrong.set_change_id(c.id());
  wrong.set_version(1);
  wrong.set_nonce("forged");
  wrong.set_result(v1::AckChangeRequest::RESULT_FAILED);
  auto forged = service_.Ack("fs1", wrong);
  EXPECT_TRUE(absl::IsFailedPrecondition(forged.status())) << forged.status();
  EXPECT_THAT(forged.status().message(), HasSubstr("forged"));
  EXPECT_TRUE(absl::IsNotFound(service_.Ack("fs2", wrong).status()));
  wrong.set_change_id("nope");
  EXPECT_TRUE(absl::IsNotFound(service_.Ack("fs1", wrong).status()));
}

// A push to many hosts: their acks arrive together, while a step on the change runs. They are
// applied in steps of several, each ack's answer is its own (a forged one among them is refused
// alone), and every host's ack is recorded and audited once.
TEST_F(ChangeServiceTest, AcksArrivingTogetherAreAppliedTogetherEachWithItsOwnAnswer) {
  constexpr int kHosts = 24;
  std::vector<std::string> names;
  for (int i = 0; i < kHosts; ++i) {
    names.push_back(absl::StrCat("fs", absl::Dec(i, absl::kZeroPad2)));
    Report(names.back());
  }
  v1::Change c = ProposeHosts(names);
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  if (Get(c.id()).state() == v1::CHANGE_STATE_PROPOSED) {
    ASSERT_TRUE(ApproveBy(bob_, c.id()).ok());
  }
  c = Get(c.id());
  ASSERT_EQ(c.state(), v1::CHANGE_STATE_ROLLING_OUT);

  std::vector<v1::AckChangeRequest> acks(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    acks[i].set_change_id(c.id());
    acks[i].set_version(c.version());
    acks[i].set_nonce(HostOf(c, names[i]).nonce());
    acks[i].set_result(v1::AckChangeRequest::RESULT_APPLIED);
  }
  acks[5].set_nonce("forged");
  int steps_before = 0;
  {
    absl::MutexLock lock(&changes_.mu);
    steps_before = changes_.steps;
    changes_.hold = true;
  }
  std::vector<absl::Status> answers(kHosts);
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
  threads.emplace_back([&] { answers[0] = service_.Ack(names[0], acks[0]).status(); });
  {
    absl::MutexLock lock(&changes_.mu);
    changes_.mu.Await(absl::Condition(&changes_.held));  // fs00's step runs (and waits)
  }
  for (int i = 1; i < kHosts; ++i) {
    threads.emplace_back([&, i] {
      ++started;
      answers[i] = service_.Ack(names[i], acks[i]).status();
    });
  }
  while (started < kHosts - 1) std::this_thread::yield();
  absl::SleepFor(absl::Milliseconds(200));  // the acks reach the queue
  {
    absl::MutexLock lock(&changes_.mu);
    changes_.hold = false;
  }
  for (auto& t : threads) t.join();

  for (int i = 0; i < kHosts; ++i) {
    if (i == 5) {
      EXPECT_TRUE(absl::IsFailedPrecondition(answers[i])) << answers[i];
      EXPECT_THAT(answers[i].message(), HasSubstr("forged"));
    } else {
      EXPECT_TRUE(answers[i].ok()) << names[i] << ": " << answers[i];
    }
  }
  {
    absl::MutexLock lock(&changes_.mu);
    // One step for fs00's ack, then the others together (a late thread may take one more).
    EXPECT_LT(changes_.steps - steps_before, kHosts / 2);
  }
  c = Get(c.id());
  int applied = 0;
  for (const auto& h : c.hosts()) applied += h.state() == v1::HOST_CHANGE_STATE_APPLIED;
  EXPECT_EQ(applied, kHosts - 1);
  EXPECT_EQ(HostOf(c, names[5]).state(), v1::HOST_CHANGE_STATE_DISPATCHED);
  const auto actions = AuditActions(c.id());
  EXPECT_EQ(std::count(actions.begin(), actions.end(), "acked"), kHosts - 1);

  // fs05's real ack then completes the change.
  acks[5].set_nonce(HostOf(c, names[5]).nonce());
  ASSERT_TRUE(service_.Ack(names[5], acks[5]).ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_COMPLETED);
}

// An ack that only records its host's result is a step on that host alone (the store reads no
// other host: ChangeStore::UpdateChangeHosts); one that moves the rollout on (a halt, a timeout
// due, the wave's last) takes the whole change, with the same outcome as before.
TEST_F(ChangeServiceTest, AcksThatOnlyRecordTheirHostTakeNoWholeChangeStep) {
  const std::vector<std::string> names = {"fs1", "fs2", "fs3", "fs4", "fs5"};
  for (const auto& n : names) Report(n);
  v1::Change c = ProposeHosts(names);
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  if (Get(c.id()).state() == v1::CHANGE_STATE_PROPOSED) {
    ASSERT_TRUE(ApproveBy(bob_, c.id()).ok());
  }
  ASSERT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_ROLLING_OUT);
  const int whole = changes_.WholeSteps();

  now_ += absl::Seconds(30);
  v1::SettingChange before;
  before.set_setting("server.requireSigning");
  before.set_value("false");
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED, {before}).ok());
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());  // again
  EXPECT_EQ(changes_.WholeSteps(), whole);
  c = Get(c.id());
  EXPECT_EQ(c.state(), v1::CHANGE_STATE_ROLLING_OUT);
  EXPECT_EQ(TimeUtil::TimestampToNanoseconds(c.updated_at()), absl::ToUnixNanos(now_));
  const v1::ChangeHost& fs1 = HostOf(c, "fs1");
  EXPECT_EQ(fs1.state(), v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(TimeUtil::TimestampToNanoseconds(fs1.finished_at()), absl::ToUnixNanos(now_));
  ASSERT_EQ(fs1.before_size(), 1);
  EXPECT_EQ(fs1.before(0).value(), "false");
  auto status = changes_.HostStatuses({"fs1"})->at("fs1");
  EXPECT_EQ(status.applied_change_id(), c.id());
  EXPECT_EQ(status.last_result(), v1::HOST_CHANGE_STATE_APPLIED);

  // More PRECONDITION_FAILED acks than the rollout allows (none): the halt is the whole step's.
  ASSERT_TRUE(
      AckAs("fs2", c.id(), v1::AckChangeRequest::RESULT_PRECONDITION_FAILED, {}, "drifted").ok());
  EXPECT_EQ(changes_.WholeSteps(), whole + 1);
  c = Get(c.id());
  EXPECT_EQ(c.state(), v1::CHANGE_STATE_HALTED);
  EXPECT_THAT(c.halt_reason(), HasSubstr("PRECONDITION_FAILED"));

  // Halted, an ack is only recorded: a step on its host alone.
  ASSERT_TRUE(AckAs("fs3", c.id(), v1::AckChangeRequest::RESULT_FAILED, {}, "no").ok());
  EXPECT_EQ(changes_.WholeSteps(), whole + 1);
  EXPECT_EQ(HostOf(Get(c.id()), "fs3").state(), v1::HOST_CHANGE_STATE_FAILED);
  EXPECT_EQ(changes_.HostStatuses({"fs3"})->at("fs3").last_error(), "no");

  // Past the ack timeout, fs5's ack also times fs4 out: the whole change's step.
  now_ += ChangeOptions{}.ack_timeout;
  ASSERT_TRUE(AckAs("fs5", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  EXPECT_EQ(changes_.WholeSteps(), whole + 2);
  c = Get(c.id());
  EXPECT_EQ(HostOf(c, "fs4").state(), v1::HOST_CHANGE_STATE_TIMED_OUT);
  EXPECT_EQ(HostOf(c, "fs5").state(), v1::HOST_CHANGE_STATE_APPLIED);
  const auto actions = AuditActions(c.id());
  EXPECT_EQ(std::count(actions.begin(), actions.end(), "acked"), 4);
  ASSERT_GE(actions.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(actions.end() - 6, actions.end()),
              ElementsAre("acked", "acked", "halted", "acked", "acked", "timed_out"));
}

// `cpu` percentages one minute apart from `start`, each sample moving `mb` MB/s.
v1::CounterWindow CpuWindow(absl::Time start, std::vector<double> cpu, double mb = 50) {
  v1::CounterWindow w;
  *w.mutable_start() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(start));
  *w.mutable_end() =
      TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(start + absl::Minutes(cpu.size())));
  w.mutable_interval()->set_seconds(60);
  for (size_t i = 0; i < cpu.size(); ++i) {
    auto* s = w.add_samples();
    *s->mutable_at() =
        TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(start + absl::Minutes(i)));
    s->set_cpu_percent(cpu[i]);
    s->set_smb_read_bytes_per_second(mb * 1e6);
    s->set_smb_write_bytes_per_second(0);
  }
  w.set_complete(true);
  return w;
}

TEST_F(ChangeServiceTest, CountersAroundTheApplyGiveTheMeasuredEffect) {
  Report("fs1");
  Report("fs2");
  v1::Change c = ProposeHosts({"fs1"});
  v1::Change other = ProposeHosts({"fs2"});
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  ASSERT_TRUE(ApproveBy(ann_, other.id()).ok());

  // The ack carries the before-window; a sample out of range is dropped from it.
  v1::Change dispatched = Get(c.id());
  v1::AckChangeRequest ack;
  ack.set_change_id(c.id());
  ack.set_version(dispatched.version());
  ack.set_nonce(HostOf(dispatched, "fs1").nonce());
  ack.set_result(v1::AckChangeRequest::RESULT_APPLIED);
  *ack.mutable_counters_before() = CpuWindow(now_ - absl::Minutes(10), {10, 12, 11, 900});
  ASSERT_TRUE(service_.Ack("fs1", ack).ok());
  v1::ChangeHost fs1 = HostOf(Get(c.id()), "fs1");
  EXPECT_EQ(fs1.state(), v1::HOST_CHANGE_STATE_APPLIED);
  EXPECT_EQ(fs1.counters_before().samples_size(), 3);
  EXPECT_EQ(fs1.counters_before().summary().samples(), 3u);
  EXPECT_DOUBLE_EQ(fs1.counters_before().summary().cpu_percent(), 11.0);
  EXPECT_FALSE(fs1.has_counters_after());
  EXPECT_FALSE(fs1.has_measured());

  // A later report carries the after-window, beside entries that are not fs1's to give: an
  // unknown change, another host's change, a version that is not the change's. None of them
  // fails the report.
  v1::ChangeCounters after;
  after.set_change_id(c.id());
  after.set_version(dispatched.version());
  *after.mutable_after() = CpuWindow(now_ + absl::Minutes(1), {14, 15, 13}, 40);
  v1::ChangeCounters unknown = after;
  unknown.set_change_id("chg-unknown");
  v1::ChangeCounters not_mine = after;
  not_mine.set_change_id(other.id());
  v1::ChangeCounters old_version = after;
  old_version.set_version(dispatched.version() + 7);
  *old_version.mutable_after() = CpuWindow(now_, {90});
  next_counters_ = {unknown, not_mine, old_version, after};
  Report("fs1");

  fs1 = HostOf(Get(c.id()), "fs1");
  EXPECT_DOUBLE_EQ(fs1.counters_before().summary().cpu_percent(), 11.0);
  EXPECT_DOUBLE_EQ(fs1.counters_after().summary().cpu_percent(), 14.0);
  ASSERT_TRUE(fs1.has_measured());
  EXPECT_DOUBLE_EQ(fs1.measured().cpu_change_points(), 3.0);
  EXPECT_NEAR(fs1.measured().smb_bytes_ratio(), 0.8, 1e-9);
  // CPU per MB/s: 33 / 150 before, 42 / 120 after.
  EXPECT_NEAR(fs1.measured().cpu_per_byte_ratio(), (42.0 / 120) / (33.0 / 150), 1e-9);
  EXPECT_EQ(fs1.measured().prediction_known(), fs1.impact().cost().known());
  EXPECT_THAT(fs1.measured().summary(), HasSubstr("CPU +3.0 points"));
  EXPECT_THAT(fs1.measured().summary(), HasSubstr("SMB traffic x0.80"));
  EXPECT_FALSE(HostOf(Get(other.id()), "fs2").has_counters_after());

  // A window over the limit is refused whole; what was stored stays, and the report is taken.
  v1::ChangeCounters huge = after;
  *huge.mutable_after() = CpuWindow(now_, std::vector<double>(2001, 50.0));
  next_counters_ = {huge};
  Report("fs1");
  EXPECT_DOUBLE_EQ(HostOf(Get(c.id()), "fs1").counters_after().summary().cpu_percent(), 14.0);

  // A second before-window (a resent ack, a report) does not replace the ack's.
  v1::ChangeCounters late_before = after;
  late_before.clear_after();
  *late_before.mutable_before() = CpuWindow(now_ - absl::Minutes(30), {70});
  next_counters_ = {late_before};
  Report("fs1");
  EXPECT_DOUBLE_EQ(HostOf(Get(c.id()), "fs1").counters_before().summary().cpu_percent(), 11.0);
}

// A wave's acks arriving together while a step runs: those before the wave's last are recorded
// on their hosts and the last takes the whole-change step alone. Every host's row, status,
// counters, audit entry and metric ends as when the same acks come one by one; and when the
// batch's host-scoped steps fail, the whole-change step applies the batch: no ack is lost.
TEST_F(ChangeServiceTest, AcksFinishingAWaveTogetherEndAsTheSameAcksOneByOne) {
  Metrics metrics;
  service_.SetMetrics(&metrics);
  constexpr int kHosts = 12;
  struct Run {
    v1::Change change;
    int whole_steps = 0;
    std::vector<int> whole_moved;  // per whole-change step, the hosts it moved
    std::vector<absl::Status> answers;
    std::vector<std::string> audit;
  };
  // Proposes a change to kHosts hosts named `prefix`NN, approves it and acks every host:
  // `together` while fs00's step is held (then `failing` batch steps fail), else one by one.
  auto run = [&](const std::string& prefix, bool together, int failing) {
    std::vector<std::string> names;
    for (int i = 0; i < kHosts; ++i) {
      names.push_back(absl::StrCat(prefix, absl::Dec(i, absl::kZeroPad2)));
      Report(names.back());
    }
    v1::Change c = ProposeHosts(names);
    EXPECT_TRUE(ApproveBy(ann_, c.id()).ok());
    if (Get(c.id()).state() == v1::CHANGE_STATE_PROPOSED) {
      EXPECT_TRUE(ApproveBy(bob_, c.id()).ok());
    }
    c = Get(c.id());
    EXPECT_EQ(c.state(), v1::CHANGE_STATE_ROLLING_OUT);
    std::vector<v1::AckChangeRequest> acks(kHosts);
    for (int i = 0; i < kHosts; ++i) {
      acks[i].set_change_id(c.id());
      acks[i].set_version(c.version());
      acks[i].set_nonce(HostOf(c, names[i]).nonce());
      acks[i].set_result(v1::AckChangeRequest::RESULT_APPLIED);
      v1::SettingChange* before = acks[i].add_before();
      before->set_setting("server.requireSigning");
      before->set_value(absl::StrCat("false-", i));
      *acks[i].mutable_counters_before() = CpuWindow(now_ - absl::Minutes(5), {10.0 + i});
    }
    Run r;
    r.answers.resize(kHosts);
    const int whole_before = changes_.WholeSteps();
    size_t moved_before = 0;
    {
      absl::MutexLock lock(&changes_.mu);
      moved_before = changes_.whole_moved.size();
    }
    if (!together) {
      for (int i = 0; i < kHosts; ++i) r.answers[i] = service_.Ack(names[i], acks[i]).status();
    } else {
      {
        absl::MutexLock lock(&changes_.mu);
        changes_.hold = true;
      }
      std::vector<std::thread> threads;
      std::atomic<int> started{0};
      threads.emplace_back([&] { r.answers[0] = service_.Ack(names[0], acks[0]).status(); });
      {
        absl::MutexLock lock(&changes_.mu);
        changes_.mu.Await(absl::Condition(&changes_.held));  // fs00's step runs (and waits)
      }
      for (int i = 1; i < kHosts; ++i) {
        threads.emplace_back([&, i] {
          ++started;
          r.answers[i] = service_.Ack(names[i], acks[i]).status();
        });
      }
      while (started < kHosts - 1) std::this_thread::yield();
      absl::SleepFor(absl::Milliseconds(200));  // the acks reach the queue
      {
        absl::MutexLock lock(&changes_.mu);
        changes_.failing_batches = failing;
        changes_.hold = false;
      }
      for (auto& t : threads) t.join();
    }
    r.whole_steps = changes_.WholeSteps() - whole_before;
    {
      absl::MutexLock lock(&changes_.mu);
      r.whole_moved.assign(changes_.whole_moved.begin() + static_cast<std::ptrdiff_t>(moved_before),
                           changes_.whole_moved.end());
    }
    r.change = Get(c.id());
    r.audit = AuditActions(c.id());
    return r;
  };

  const Run serial = run("one", false, 0);
  const Run together = run("all", true, 0);
  const Run failing = run("bad", true, 2);
  for (const Run* r : {&serial, &together, &failing}) {
    for (int i = 0; i < kHosts; ++i) EXPECT_TRUE(r->answers[i].ok()) << i << ": " << r->answers[i];
    EXPECT_EQ(r->change.state(), v1::CHANGE_STATE_COMPLETED) << r->change.id();
    ASSERT_EQ(r->change.hosts_size(), kHosts);
    for (int i = 0; i < kHosts; ++i) {
      const v1::ChangeHost& h = r->change.hosts(i);
      const v1::ChangeHost& one = serial.change.hosts(i);
      EXPECT_EQ(h.state(), v1::HOST_CHANGE_STATE_APPLIED) << h.host();
      EXPECT_EQ(h.finished_at().seconds(), one.finished_at().seconds()) << h.host();
      ASSERT_EQ(h.before_size(), 1) << h.host();
      EXPECT_EQ(h.before(0).value(), absl::StrCat("false-", i));
      EXPECT_DOUBLE_EQ(h.counters_before().summary().cpu_percent(), 10.0 + i) << h.host();
      auto status = changes_.HostStatuses({h.host()});
      ASSERT_TRUE(status.ok());
      EXPECT_EQ(status->at(h.host()).applied_change_id(), r->change.id());
      EXPECT_EQ(status->at(h.host()).last_result(), v1::HOST_CHANGE_STATE_APPLIED);
    }
    EXPECT_EQ(std::count(r->audit.begin(), r->audit.end(), "acked"), kHosts) << r->change.id();
    EXPECT_EQ(std::count(r->audit.begin(), r->audit.end(), "completed"), 1) << r->change.id();
  }
  // One by one and together, only the wave's last ack takes the whole change, alone; with the
  // batch's host steps failing, the whole-change step took the batch.
  EXPECT_EQ(serial.whole_steps, 1);
  EXPECT_THAT(serial.whole_moved, ElementsAre(1));
  EXPECT_EQ(together.whole_steps, 1);
  EXPECT_THAT(together.whole_moved, ElementsAre(1));
  // (An ack that reached the queue late is a step of its own: count the hosts, not the steps.)
  int moved_by_whole = 0;
  for (int moved : failing.whole_moved) moved_by_whole += moved;
  EXPECT_EQ(moved_by_whole, kHosts - 1);
  EXPECT_EQ(SampleIn(metrics.Text(), "smbfleet_change_orders_total", {{"result", "APPLIED"}}),
            3 * kHosts);
  EXPECT_EQ(SampleIn(metrics.Text(), "smbfleet_order_ack_latency_seconds_count", {}), 3 * kHosts);
}

TEST_F(ChangeServiceTest, TheNewestSavedCalibrationCorrectsTheCpuPredictionOfItsClass) {
  // A host with a benchmark of every algorithm, so that the model knows its prediction.
  for (int alg = v1::AES_128_CCM; alg <= v1::HMAC_SHA256; ++alg) {
    for (uint64_t size : {64u << 10, 1u << 20}) {
      v1::Benchmark b;
      b.set_algorithm(static_cast<v1::CryptoAlgorithm>(alg));
      b.set_buffer_bytes(size);
      b.set_bytes_per_second(2e9);
      b.set_threads(1);
      benchmarks_.push_back(b);
    }
  }
  Report("fs1");
  const v1::Change plain = ProposeHosts({"fs1"});
  ASSERT_EQ(plain.hosts_size(), 1);
  const v1::PredictedCost& model = plain.hosts(0).impact().cost();
  ASSERT_TRUE(model.known()) << model.summary();
  ASSERT_GT(model.cpu_ratio(), 0);
  EXPECT_EQ(model.calibration_id(), 0);

  // fs1 reported no platform: its class is "unknown" with the model's protection.
  auto calibration = [&](double factor) {
    v1::CostModelCalibration c;
    c.set_saved_by("carol");
    *c.mutable_since() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now_));
    auto* g = c.add_groups();
    g->set_platform("unknown");
    g->set_protection_before(model.before());
    g->set_protection_after(model.after());
    g->set_suggested_cpu_per_byte_factor(factor);
    auto* other = c.add_groups();  // another class: not fs1's
    *other = *g;
    other->set_platform("windows");
    other->set_suggested_cpu_per_byte_factor(3.0);
    return c;
  };
  ASSERT_TRUE(changes_.SaveCostModelCalibration(calibration(2.0), {}).ok());
  auto newest = changes_.SaveCostModelCalibration(calibration(1.5), {});
  ASSERT_TRUE(newest.ok()) << newest.status();

  const v1::Change calibrated = ProposeHosts({"fs1"});
  ASSERT_EQ(calibrated.hosts_size(), 1);
  const v1::PredictedCost& cost = calibrated.hosts(0).impact().cost();
  EXPECT_NEAR(cost.cpu_ratio(), model.cpu_ratio() * 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(cost.cpu_change_points(), model.cpu_change_points());
  EXPECT_EQ(cost.summary(), model.summary());
  EXPECT_EQ(cost.calibration_id(), *newest);
  EXPECT_DOUBLE_EQ(cost.calibration_factor(), 1.5);
  // The change as stored says so too; the first proposal keeps the model's figure.
  EXPECT_EQ(HostOf(Get(calibrated.id()), "fs1").impact().cost().calibration_id(), *newest);
  EXPECT_EQ(HostOf(Get(plain.id()), "fs1").impact().cost().calibration_id(), 0);
}

TEST_F(ChangeServiceTest, MetricsCountOrdersSentAndAcksWithTheirLatency) {
  Metrics metrics;
  service_.SetMetrics(&metrics);
  dispatcher_.SetMetrics(&metrics);
  auto value = [&](const char* name, std::map<std::string, std::string> labels = {}) {
    return SampleIn(metrics.Text(), name, labels);
  };
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  router_.connected = {"fs1"};
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  EXPECT_EQ(value("smbfleet_change_orders_sent_total"), 1);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_count"), 0);

  now_ += absl::Seconds(90);  // the agent takes its time
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "APPLIED"}}), 1);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_count"), 1);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_sum"), 90);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_bucket", {{"le", "60"}}), 0);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_bucket", {{"le", "300"}}), 1);

  // The same ack again and a forged one move nothing.
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  v1::AckChangeRequest forged;
  forged.set_change_id(c.id());
  forged.set_version(1);
  forged.set_nonce("forged");
  forged.set_result(v1::AckChangeRequest::RESULT_FAILED);
  EXPECT_FALSE(service_.Ack("fs1", forged).ok());
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "APPLIED"}}), 1);
  EXPECT_EQ(value("smbfleet_change_orders_total", {{"result", "FAILED"}}), 0);
  EXPECT_EQ(value("smbfleet_order_ack_latency_seconds_count"), 1);
  EXPECT_EQ(value("smbfleet_change_orders_sent_total"), 1);
}

TEST_F(ChangeServiceTest, FailedAckHaltsAndTheSecondWaveIsNeverDispatched) {
  Report("fs1");
  Report("fs2");
  v1::Change c = ProposeHosts({"fs1", "fs2"});
  router_.connected = {"fs1", "fs2"};
  v1::RolloutOptions o;
  o.add_canary_hosts("fs1");
  ASSERT_TRUE(ApproveBy(ann_, c.id(), o).ok());
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id()));
  ASSERT_TRUE(
      AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_FAILED, {}, "testparm said no").ok());
  v1::Change halted = Get(c.id());
  EXPECT_EQ(halted.state(), v1::CHANGE_STATE_HALTED);
  EXPECT_THAT(halted.halt_reason(), HasSubstr("testparm said no"));
  for (int i = 0; i < 5; ++i) {
    now_ += absl::Hours(1);
    ASSERT_TRUE(service_.TickDue().ok());
  }
  EXPECT_THAT(OrdersSentTo("fs2"), IsEmpty());
  EXPECT_EQ(HostOf(Get(c.id()), "fs2").state(), v1::HOST_CHANGE_STATE_PENDING);

  // Halt / resume need the approver for resume; the proposer cannot resume.
  EXPECT_TRUE(absl::IsPermissionDenied(service_.Resume(pat_, c.id(), "").status()));
  auto resumed = service_.Resume(ann_, c.id(), "fixed the include");
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_THAT(OrdersSentTo("fs2"), ElementsAre(c.id()));
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed", "approved", "dispatched", "acked",
                                                "halted", "resumed", "dispatched"));
}

TEST_F(ChangeServiceTest, RefusedAckHaltsLikeFailed) {
  Report("fs1");
  Report("fs2");
  v1::Change c = ProposeHosts({"fs1", "fs2"});
  v1::RolloutOptions o;
  o.add_canary_hosts("fs1");
  ASSERT_TRUE(ApproveBy(ann_, c.id(), o).ok());
  ASSERT_TRUE(
      AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_REFUSED, {}, "enforcement is off").ok());
  v1::Change halted = Get(c.id());
  EXPECT_EQ(halted.state(), v1::CHANGE_STATE_HALTED);
  EXPECT_THAT(halted.halt_reason(), HasSubstr("enforcement is off"));
  EXPECT_EQ(HostOf(halted, "fs1").state(), v1::HOST_CHANGE_STATE_REFUSED);
  EXPECT_EQ(HostOf(halted, "fs2").state(), v1::HOST_CHANGE_STATE_PENDING);
}

TEST_F(ChangeServiceTest, RollbackSendsTheJournaledBeforeValuesAsALinkedChange) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  router_.connected = {"fs1"};
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  v1::SettingChange before;
  before.set_setting("server.requireSigning");
  before.set_value("false");
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED, {before}).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(service_.Rollback(pat_, c.id(), "").status()));
  auto r = service_.Rollback(ann_, c.id(), "users complain");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->change().state(), v1::CHANGE_STATE_ROLLED_BACK);
  const v1::Change& rb = r->rollback();
  EXPECT_EQ(rb.source(), v1::CHANGE_SOURCE_ROLLBACK);
  EXPECT_EQ(rb.rollback_of(), c.id());
  EXPECT_EQ(r->change().rolled_back_by(), rb.id());
  ASSERT_EQ(rb.hosts_size(), 1);
  ASSERT_EQ(rb.hosts(0).steps_size(), 1);
  EXPECT_EQ(rb.hosts(0).steps(0).setting(), "server.requireSigning");
  EXPECT_EQ(rb.hosts(0).steps(0).value(), "false");
  EXPECT_EQ(rb.hosts(0).steps(0).expected_current(), "true");
  // Signed like any change: proposed (by the original proposer, asked for by ann), and nothing
  // is sent before an approver signed it.
  EXPECT_EQ(rb.state(), v1::CHANGE_STATE_PROPOSED);
  EXPECT_EQ(rb.proposed_by(), "pat");
  EXPECT_EQ(rb.requested_by(), "ann");
  EXPECT_FALSE(rb.approval_nonce().empty());
  EXPECT_EQ(rb.hosts(0).state(), v1::HOST_CHANGE_STATE_PENDING);
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id()));
  auto signed_rb = ApproveBy(ann_, rb.id());
  ASSERT_TRUE(signed_rb.ok()) << signed_rb.status();
  EXPECT_EQ(HostOf(Get(rb.id()), "fs1").state(), v1::HOST_CHANGE_STATE_DISPATCHED);
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id(), rb.id()));
  const v1::ChangeOrder& order = router_.sent["fs1"].back().change_order();
  EXPECT_EQ(order.rollback_of(), c.id());
  ASSERT_EQ(order.signatures_size(), 1);
  EXPECT_EQ(order.signatures(0).approver(), "ann");
  EXPECT_TRUE(VerifyEd25519(KeyOf("ann").public_raw, order.approval_payload(),
                            order.signatures(0).signature())
                  .ok());
  auto payload = ParseApprovalPayload(order.approval_payload());
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(payload->rollback_of(), c.id());
  EXPECT_EQ(payload->proposed_by(), "pat");
  const v1::HostOrder mine = SignedHostOrder(order);
  ASSERT_EQ(payload->host_count(), 1U);
  ASSERT_EQ(mine.settings_size(), 1);
  EXPECT_EQ(mine.settings(0).expected_current(), "true");
  EXPECT_EQ(mine.settings(0).value(), "false");
  EXPECT_TRUE(Get(rb.id()).hosts_size() == 1);
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed", "approved", "dispatched", "acked",
                                                "completed", "rolled_back"));
  EXPECT_THAT(AuditActions(rb.id()), ElementsAre("proposed", "approved", "dispatched"));
  // The rollback order is acked like any other.
  ASSERT_TRUE(AckAs("fs1", rb.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  EXPECT_EQ(Get(rb.id()).state(), v1::CHANGE_STATE_COMPLETED);
}

TEST_F(ChangeServiceTest, RollbackIsNotSignedByTheOriginalProposer) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  router_.connected = {"fs1"};
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  auto r = service_.Rollback(ann_, c.id(), "undo");
  ASSERT_TRUE(r.ok()) << r.status();
  Actor pat_as_approver{"pat", Role::kApprover};
  auto own = ApproveBy(pat_as_approver, r->rollback().id());
  EXPECT_EQ(RefusalOf(own.status()), Refusal::kOwnChange) << own.status();
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id()));
  EXPECT_TRUE(ApproveBy(bob_, r->rollback().id()).ok());
  EXPECT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id(), r->rollback().id()));
}

TEST_F(ChangeServiceTest, DispatchedOrderCarriesThePayloadEveryApproverSigned) {
  Report("fs1", false, true, /*guest_session=*/true);
  v1::Change c = ProposeHosts({"fs1"});
  ASSERT_EQ(c.approvals_required(), 2u);
  router_.connected = {"fs1"};
  ASSERT_TRUE(ApproveBy(ann_, c.id()).ok());
  EXPECT_THAT(OrdersSentTo("fs1"), IsEmpty());
  ASSERT_TRUE(ApproveBy(bob_, c.id()).ok());
  ASSERT_THAT(OrdersSentTo("fs1"), ElementsAre(c.id()));
  const v1::ChangeOrder& order = router_.sent["fs1"].back().change_order();
  ASSERT_EQ(order.signatures_size(), 2);
  for (const auto& sig : order.signatures()) {
    const Ed25519Key& key = KeyOf(sig.approver());
    EXPECT_EQ(sig.key_id(), KeyId(key.public_raw));
    EXPECT_TRUE(VerifyEd25519(key.public_raw, order.approval_payload(), sig.signature()).ok())
        << sig.approver();
  }
  auto payload = ParseApprovalPayload(order.approval_payload());
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(payload->change_id(), c.id());
  EXPECT_EQ(payload->version(), c.version());
  EXPECT_EQ(payload->nonce(), c.approval_nonce());
  EXPECT_EQ(payload->proposed_by(), "pat");
  EXPECT_EQ(payload->approvals_required(), 2u);
  EXPECT_EQ(payload->content_hash(), c.content_hash());
  EXPECT_EQ(payload->not_after().seconds(), c.not_after().seconds());
  EXPECT_EQ(payload->format(), kApprovalFormatV2);
  ASSERT_EQ(payload->host_count(), 1U);
  const v1::HostOrder mine = SignedHostOrder(order);
  EXPECT_EQ(mine.host(), "fs1");
  ASSERT_EQ(mine.settings_size(), order.settings_size());
  for (int i = 0; i < order.settings_size(); ++i) {
    bool found = false;
    for (const auto& s : mine.settings()) {
      found |= s.setting() == order.settings(i).setting() &&
               s.expected_current() == order.settings(i).expected_current() &&
               s.value() == order.settings(i).value();
    }
    EXPECT_TRUE(found) << order.settings(i).setting();
  }
  // The stored approvals keep the key and the signature.
  v1::Change stored = Get(c.id());
  ASSERT_EQ(stored.approvals_size(), 2);
  EXPECT_EQ(stored.approvals(0).key_id(), KeyId(KeyOf("ann").public_raw));
  EXPECT_EQ(stored.approvals(0).signature(), order.signatures(0).signature());
}

// Each bad signature is refused and leaves the change as it was: no approval, no audit row.
class BadSignatureTest : public ChangeServiceTest {
 protected:
  void SetUp() override {
    Report("fs1");
    change_ = ProposeHosts({"fs1"});
    router_.connected = {"fs1"};
    KeyOf("ann");
    KeyOf("bob");
  }

  absl::Status ApproveAsAnnWith(const v1::OrderSignature& sig) {
    v1::ApproveChangeRequest req;
    req.set_id(change_.id());
    *req.mutable_signature() = sig;
    return service_.Approve(ann_, req).status();
  }

  void ExpectNothingStored() {
    v1::Change now = Get(change_.id());
    EXPECT_EQ(now.state(), v1::CHANGE_STATE_PROPOSED);
    EXPECT_EQ(now.approvals_size(), 0);
    EXPECT_THAT(AuditActions(change_.id()), ElementsAre("proposed"));
    EXPECT_THAT(OrdersSentTo("fs1"), IsEmpty());
  }

  v1::Change change_;
};

TEST_F(BadSignatureTest, NoSignatureIsRefused) {
  absl::Status s = ApproveAsAnnWith({});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("signature"));
  ExpectNothingStored();
}

TEST_F(BadSignatureTest, AnotherPersonsKeyIsRefused) {
  // Bob's valid signature, sent by ann as hers.
  v1::OrderSignature bobs = SignedBy("bob", change_.id());
  bobs.set_approver("ann");
  absl::Status s = ApproveAsAnnWith(bobs);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("registered to bob"));
  ExpectNothingStored();
}

TEST_F(BadSignatureTest, ARevokedKeyIsRefused) {
  v1::OrderSignature sig = SignedBy("ann", change_.id());
  ASSERT_TRUE(keys_.RevokeKey(sig.key_id(), "root", "laptop lost", now_).ok());
  absl::Status s = ApproveAsAnnWith(sig);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("revoked"));
  ExpectNothingStored();
}

TEST_F(BadSignatureTest, AForgedSignatureIsRefused) {
  v1::OrderSignature sig = SignedBy("ann", change_.id());
  std::string forged = sig.signature();
  forged[7] ^= 0x01;
  sig.set_signature(forged);
  absl::Status s = ApproveAsAnnWith(sig);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("does not verify"));
  ExpectNothingStored();
}

TEST_F(BadSignatureTest, AStalePayloadIsRefusedSayingTheChangeMovedOn) {
  // Ann signs what she fetched; then the stored change is altered (another value for fs1).
  v1::OrderSignature sig = SignedBy("ann", change_.id());
  auto altered = changes_.UpdateChange(change_.id(), [](const v1::Change& c) {
    ChangeUpdate u;
    u.change = c;
    u.change.mutable_hosts(0)->mutable_steps(0)->set_value("false");
    return absl::StatusOr<ChangeUpdate>(std::move(u));
  });
  ASSERT_TRUE(altered.ok()) << altered.status();
  absl::Status s = ApproveAsAnnWith(sig);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("moved on"));
  EXPECT_EQ(Get(change_.id()).approvals_size(), 0);
  EXPECT_THAT(OrdersSentTo("fs1"), IsEmpty());
  // Signed again over what it is now, it counts.
  v1::ApproveChangeRequest req;
  req.set_id(change_.id());
  *req.mutable_signature() = SignedBy("ann", change_.id());
  EXPECT_TRUE(service_.Approve(ann_, req).ok());
}

TEST_F(BadSignatureTest, ASignatureOverAnotherChangeIsRefused) {
  Report("fs2");
  v1::Change other = ProposeHosts({"fs2"});
  v1::OrderSignature sig = SignedBy("ann", other.id());
  absl::Status s = ApproveAsAnnWith(sig);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  ExpectNothingStored();
}

TEST_F(ChangeServiceTest, UnfinishedChangeExpires) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  v1::RolloutOptions o;
  o.add_windows("*:Sun 03:00-03:01");  // closed now (a Friday); opens briefly each week
  ASSERT_TRUE(ApproveBy(ann_, c.id(), o).ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_APPROVED);
  now_ += absl::Hours(8 * 24);
  ASSERT_TRUE(service_.TickDue().ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_EXPIRED);
  EXPECT_EQ(AuditActions(c.id()).back(), "expired");
  EXPECT_THAT(*changes_.LiveChangeIds(), IsEmpty());
}

TEST_F(ChangeServiceTest, UnapprovedProposalExpiresToo) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  ASSERT_TRUE(service_.TickDue().ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_PROPOSED);
  now_ += absl::Hours(7 * 24 + 1);
  ASSERT_TRUE(service_.TickDue().ok());
  EXPECT_EQ(Get(c.id()).state(), v1::CHANGE_STATE_EXPIRED);
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed", "expired"));
  EXPECT_TRUE(absl::IsFailedPrecondition(ApproveBy(ann_, c.id()).status()));
}

TEST_F(ChangeServiceTest, RefusalEventDuringTheWatchPeriodHalts) {
  Report("fs1");
  Report("fs2");
  v1::Change c = ProposeHosts({"fs1", "fs2"});
  v1::RolloutOptions o;
  o.add_canary_hosts("fs1");
  o.set_watch("1h");
  ASSERT_TRUE(ApproveBy(ann_, c.id(), o).ok());
  now_ += absl::Minutes(1);
  ASSERT_TRUE(AckAs("fs1", c.id(), v1::AckChangeRequest::RESULT_APPLIED).ok());
  ASSERT_TRUE(service_.TickDue().ok());  // fs1 is now watched
  EXPECT_TRUE(service_.Watching("fs1"));
  EXPECT_FALSE(service_.Watching("fs2"));
  now_ += absl::Minutes(5);
  v1::Event refusal;
  refusal.set_event_id(1003);
  refusal.set_kind("unencrypted_rejected");
  refusal.set_client_name("NEWPC");
  *refusal.mutable_time() = TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(now_));
  Report("fs1", true, true, false, {}, {refusal});
  v1::Change halted = Get(c.id());
  EXPECT_EQ(halted.state(), v1::CHANGE_STATE_HALTED);
  EXPECT_THAT(halted.halt_reason(), HasSubstr("NEWPC"));
  EXPECT_EQ(HostOf(halted, "fs2").state(), v1::HOST_CHANGE_STATE_PENDING);
}

TEST_F(ChangeServiceTest, RejectNeedsAReasonAndEndsTheChange) {
  Report("fs1");
  v1::Change c = ProposeHosts({"fs1"});
  EXPECT_TRUE(absl::IsInvalidArgument(service_.Reject(ann_, c.id(), "").status()));
  auto r = service_.Reject(ann_, c.id(), "not now");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state(), v1::CHANGE_STATE_REJECTED);
  EXPECT_EQ(r->rejected_by(), "ann");
  auto late = ApproveBy(bob_, c.id());
  EXPECT_TRUE(absl::IsFailedPrecondition(late.status())) << late.status();
  EXPECT_THAT(AuditActions(c.id()), ElementsAre("proposed", "rejected"));
}

TEST_F(ChangeServiceTest, WaiversAreRequestedAndApprovedByDifferentPeople) {
  Report("fs1");
  v1::Waiver w;
  w.set_rule_id("server-signing-required");
  w.set_host("fs1");
  w.set_justification("legacy scanner until March");
  w.set_ticket("CHG-42");
  *w.mutable_expires_at() =
      TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(now_ + absl::Hours(48)));
  EXPECT_TRUE(absl::IsPermissionDenied(service_.RequestWaiver(vic_, w).status()));
  v1::Waiver past = w;
  *past.mutable_expires_at() = TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(now_));
  auto expired = service_.RequestWaiver(pat_, past);
  EXPECT_TRUE(absl::IsInvalidArgument(expired.status()));
  EXPECT_THAT(expired.status().message(), HasSubstr("expires_at"));
  v1::Waiver no_ticket = w;
  no_ticket.clear_ticket();
  EXPECT_THAT(service_.RequestWaiver(pat_, no_ticket).status().message(), HasSubstr("ticket"));

  auto requested = service_.RequestWaiver(pat_, w);
  ASSERT_TRUE(requested.ok()) << requested.status();
  EXPECT_EQ(requested->state(), v1::WAIVER_STATE_REQUESTED);
  Actor pat_as_approver{"pat", Role::kApprover};
  auto own = service_.ApproveWaiver(pat_as_approver, requested->id(), "");
  EXPECT_TRUE(absl::IsFailedPrecondition(own.status())) << own.status();
  auto approved = service_.ApproveWaiver(ann_, requested->id(), "fine");
  ASSERT_TRUE(approved.ok()) << approved.status();
  EXPECT_EQ(approved->approved_by(), "ann");
  EXPECT_EQ(compliance_.ActiveWaivers()->size(), 1u);
  auto revoked = service_.RevokeWaiver(Actor{"root", Role::kAdmin}, requested->id(), "replaced");
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->state(), v1::WAIVER_STATE_REVOKED);
  EXPECT_THAT(*compliance_.ActiveWaivers(), IsEmpty());
  AuditQuery q;
  q.waiver_id = requested->id();
  std::vector<std::string> actions;
  auto entries = changes_.ListAudit(q);
  ASSERT_TRUE(entries.ok());
  for (const auto& e : entries.value()) actions.push_back(e.action());
  EXPECT_THAT(actions, ElementsAre("waiver_requested", "waiver_approved", "waiver_revoked"));
}

}  // namespace
}  // namespace smbfleet::collector::changes
