// The admin API over the in-memory stores and a fake push router.
#include "collector/admin/admin_api.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "collector/changes/order_dispatcher.h"
#include "collector/ingest/pipeline.h"
#include "collector/store/memory/memory_approver_key_store.h"
#include "collector/store/memory/memory_change_store.h"
#include "collector/store/memory/memory_store.h"
#include "collector/testing/test_policy.h"
#include "common/approval_signing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

class FakeRouter : public PushRouter {
 public:
  bool Send(const std::string& host, const smbfleet::v1::WatchResponse& message) override {
    if (!Connected(host)) return false;
    sent[host].push_back(message);
    return true;
  }
  bool Connected(const std::string& host) const override { return connected.count(host) > 0; }

  std::set<std::string> connected;
  std::map<std::string, std::vector<smbfleet::v1::WatchResponse>> sent;
};

class AdminApiTest : public ::testing::Test {
 protected:
  void Report(const std::string& host, int n) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12)));
    r.mutable_posture()->mutable_server()->set_require_signing(true);
    auto* share = r.mutable_posture()->add_shares();
    share->set_name("HR");
    share->set_path("/srv/hr");
    auto result = pipeline_->Ingest(host, r);
    ASSERT_TRUE(result.ok()) << result.status();
  }

  Principal operator_ = PrincipalFromIdentity({"alice", "operator", "viewer"});
  Principal agent_ = PrincipalFromIdentity({"fs01", "agent", ""});
  MemoryHostStore hosts_;
  MemoryComplianceStore compliance_{&hosts_};
  FakeRouter router_;
  std::unique_ptr<ReportPipeline> pipeline_ =
      std::make_unique<ReportPipeline>(&hosts_, &compliance_, nullptr);
  AdminApi api_{&hosts_, &compliance_, &router_};
};

TEST_F(AdminApiTest, ListHostsPagesByName) {
  for (int i = 1; i <= 5; ++i) Report(absl::StrCat("fs0", i), i);
  Report("dc01", 6);
  smbfleet::v1::ListHostsRequest req;
  req.set_name_prefix("fs");
  req.set_page_size(2);
  std::vector<std::string> seen;
  for (int page = 0; page < 10; ++page) {
    auto resp = api_.ListHosts(operator_, req);
    ASSERT_TRUE(resp.ok()) << resp.status();
    for (const auto& h : resp->hosts()) seen.push_back(h.name());
    if (resp->next_page_token().empty()) break;
    req.set_page_token(resp->next_page_token());
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("fs01", "fs02", "fs03", "fs04", "fs05"));
}

TEST_F(AdminApiTest, ListHostsFiltersCountAndTheStaleWindow) {
  for (int i = 1; i <= 3; ++i) Report(absl::StrCat("fs0", i), i);
  Report("dc01", 4);
  smbfleet::v1::ListHostsRequest req;
  req.set_query("FS");
  req.set_page_size(2);
  auto first = api_.ListHosts(operator_, req);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->hosts_size(), 2);
  EXPECT_EQ(first->total(), 3u);
  EXPECT_EQ(first->next_page_token(), "fs02");

  smbfleet::v1::ListHostsRequest stale;
  stale.set_stale_only(true);
  api_.SetStaleAfter(absl::Hours(1), [] { return absl::Now() + absl::Hours(2); });
  EXPECT_EQ(api_.ListHosts(operator_, stale)->total(), 4u);
  api_.SetStaleAfter(absl::Hours(1), [] { return absl::Now(); });
  EXPECT_EQ(api_.ListHosts(operator_, stale)->total(), 0u);

  smbfleet::v1::ListHostsRequest bad;
  bad.set_platform(static_cast<smbfleet::v1::Platform>(42));
  auto refused = api_.ListHosts(operator_, bad);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("platform"));
  EXPECT_EQ(api_.ListHosts(agent_, req).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(AdminApiTest, FleetOverviewIsBoundedAndStamped) {
  Report("fs01", 1);
  Report("fs02", 2);
  const absl::Time later = absl::Now() + absl::Hours(3);
  api_.SetStaleAfter(absl::Hours(2), [later] { return later; });
  auto overview = api_.GetFleetOverview(operator_, {});
  ASSERT_TRUE(overview.ok()) << overview.status();
  EXPECT_EQ(overview->hosts(), 2u);
  EXPECT_EQ(overview->stale_count(), 2u);
  EXPECT_EQ(overview->trend_size(), 30);  // the default window
  EXPECT_EQ(overview->generated_at().seconds(), absl::ToUnixSeconds(later));
  EXPECT_EQ(overview->drift_count(), 0u);  // no change store here

  smbfleet::v1::GetFleetOverviewRequest big;
  big.set_top(1000);
  auto refused = api_.GetFleetOverview(operator_, big);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("top: 1000"));
  EXPECT_EQ(api_.GetFleetOverview(agent_, {}).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(AdminApiTest, ConnectedComesFromTheRouter) {
  Report("fs01", 1);
  Report("fs02", 2);
  router_.connected = {"fs02"};
  auto list = api_.ListHosts(operator_, {});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->hosts_size(), 2);
  EXPECT_FALSE(list->hosts(0).connected());
  EXPECT_TRUE(list->hosts(1).connected());
  EXPECT_TRUE(list->next_page_token().empty());

  smbfleet::v1::GetHostRequest get;
  get.set_name("fs02");
  EXPECT_TRUE(api_.GetHost(operator_, get)->summary().connected());
}

TEST_F(AdminApiTest, UnknownHostIsNotFound) {
  smbfleet::v1::GetHostRequest get;
  get.set_name("ghost");
  auto resp = api_.GetHost(operator_, get);
  EXPECT_TRUE(absl::IsNotFound(resp.status())) << resp.status();
  EXPECT_THAT(std::string(resp.status().message()), HasSubstr("'ghost'"));
}

TEST_F(AdminApiTest, GetHostShowsTheClassificationOfEachShare) {
  auto policy = testing::TinyPolicy();
  pipeline_ = std::make_unique<ReportPipeline>(&hosts_, &compliance_, &policy);
  Report("fs01", 1);
  smbfleet::v1::GetHostRequest get;
  get.set_name("fs01");
  auto resp = api_.GetHost(operator_, get);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->posture().shares_size(), 1);
  EXPECT_EQ(resp->posture().shares(0).classification(), "pii");
}

TEST_F(AdminApiTest, RequestReportGoesThroughTheRouter) {
  const Principal nudger = PrincipalFromIdentity({"alice", "operator", "proposer"});
  router_.connected = {"fs01"};
  smbfleet::v1::RequestReportRequest req;
  req.set_name("fs01");
  auto resp = api_.RequestReport(nudger, req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_TRUE(resp->delivered());
  ASSERT_EQ(router_.sent["fs01"].size(), 1u);
  EXPECT_THAT(router_.sent["fs01"][0].report_now().reason(), HasSubstr("alice"));

  req.set_name("fs02");
  EXPECT_TRUE(absl::IsFailedPrecondition(api_.RequestReport(nudger, req).status()));
}

TEST_F(AdminApiTest, ViewersAndOperatorsWithoutARoleCannotNudge) {
  router_.connected = {"fs01"};
  smbfleet::v1::RequestReportRequest req;
  req.set_name("fs01");
  auto viewer = api_.RequestReport(operator_, req);
  EXPECT_TRUE(absl::IsPermissionDenied(viewer.status())) << viewer.status();
  EXPECT_THAT(std::string(viewer.status().message()), HasSubstr("request-report"));
  const Principal roleless = PrincipalFromIdentity({"rob", "operator", ""});
  EXPECT_TRUE(absl::IsPermissionDenied(api_.RequestReport(roleless, req).status()));
  auto list = api_.ListHosts(roleless, {});
  EXPECT_TRUE(absl::IsPermissionDenied(list.status())) << list.status();
  EXPECT_THAT(std::string(list.status().message()), HasSubstr("has no role"));
  EXPECT_TRUE(router_.sent.empty());
}

TEST_F(AdminApiTest, NudgesAreRateLimitedPerHostAndPerCaller) {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  api_.SetNudgeLimits({absl::Seconds(60), 2}, [&now] { return now; });
  const Principal ann = PrincipalFromIdentity({"ann", "operator", "approver"});
  const Principal pat = PrincipalFromIdentity({"pat", "operator", "proposer"});
  router_.connected = {"fs01", "fs02", "fs03"};
  smbfleet::v1::RequestReportRequest req;
  req.set_name("fs01");
  ASSERT_TRUE(api_.RequestReport(ann, req).ok());
  now += absl::Seconds(10);
  auto again = api_.RequestReport(pat, req);
  EXPECT_TRUE(absl::IsResourceExhausted(again.status())) << again.status();
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("host 'fs01'"));
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("2027-01-15T08:01:00Z"));
  EXPECT_EQ(router_.sent["fs01"].size(), 1u);

  req.set_name("fs02");
  ASSERT_TRUE(api_.RequestReport(ann, req).ok());
  req.set_name("fs03");
  auto capped = api_.RequestReport(ann, req);
  EXPECT_TRUE(absl::IsResourceExhausted(capped.status())) << capped.status();
  EXPECT_THAT(std::string(capped.status().message()), HasSubstr("'ann'"));
  EXPECT_TRUE(router_.sent["fs03"].empty());
  EXPECT_TRUE(api_.RequestReport(pat, req).ok());
}

// A long reason is cut to 200 bytes on a character boundary: a cut inside "\xc3\xbc" would make
// the WatchResponse a string that is not UTF-8, which the agent's parser refuses.
TEST_F(AdminApiTest, LongNudgeReasonIsCutOnACharacter) {
  router_.connected = {"fs01"};
  smbfleet::v1::RequestReportRequest req;
  req.set_name("fs01");
  req.set_reason(std::string(199, 'a') + "\xc3\xbc" + std::string(50, 'b'));
  const Principal nudger = PrincipalFromIdentity({"alice", "operator", "proposer"});
  ASSERT_TRUE(api_.RequestReport(nudger, req).ok());
  ASSERT_EQ(router_.sent["fs01"].size(), 1u);
  EXPECT_EQ(router_.sent["fs01"][0].report_now().reason(), std::string(199, 'a'));
}

TEST_F(AdminApiTest, AgentCertificateCannotUseAdminCalls) {
  Report("fs01", 1);
  router_.connected = {"fs01"};
  smbfleet::v1::GetHostRequest get;
  get.set_name("fs01");
  smbfleet::v1::RequestReportRequest nudge;
  nudge.set_name("fs01");
  for (const absl::Status& s :
       {api_.ListHosts(agent_, {}).status(), api_.GetHost(agent_, get).status(),
        api_.RequestReport(agent_, nudge).status(), api_.GetCompliance(agent_, {}).status(),
        api_.ListFindings(agent_, {}).status()}) {
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("operator"));
  }
  EXPECT_TRUE(router_.sent.empty());
}

// The change calls through AdminApi: roles from the certificate, the workflow behind them, and
// desired vs applied on the hosts.
class AdminApiChangesTest : public AdminApiTest {
 protected:
  AdminApiChangesTest() {
    workflow_.SetOrderSignal(&signal_);
    workflow_.SetApproverKeys(&keys_);
    changes_api_.SetApproverKeys(&keys_);
  }

  // `name`'s key, made on "their machine" and registered by an admin on first use.
  const Ed25519Key& KeyOf(const std::string& name) {
    auto it = people_keys_.find(name);
    if (it != people_keys_.end()) return it->second;
    auto key = GenerateEd25519Key();
    EXPECT_TRUE(key.ok()) << key.status();
    smbfleet::v1::RegisterApproverKeyRequest reg;
    reg.set_name(name);
    reg.set_public_key(key->public_raw);
    auto registered = changes_api_.RegisterApproverKey(As("root", "admin"), reg);
    EXPECT_TRUE(registered.ok()) << registered.status();
    return people_keys_.emplace(name, *std::move(key)).first->second;
  }

  // `request` signed by `name` over the payload GetChange shows, as smbfleetctl signs it.
  smbfleet::v1::ApproveChangeRequest SignedBy(const std::string& name,
                                              smbfleet::v1::ApproveChangeRequest request) {
    const Ed25519Key& key = KeyOf(name);
    smbfleet::v1::GetChangeRequest get;
    get.set_id(request.id());
    auto shown = changes_api_.GetChange(As(name, "viewer"), get);
    EXPECT_TRUE(shown.ok()) << shown.status();
    auto signature = SignEd25519(key.private_pem, shown.ok() ? shown->approval_payload() : "");
    EXPECT_TRUE(signature.ok()) << signature.status();
    request.mutable_signature()->set_approver(name);
    request.mutable_signature()->set_key_id(KeyId(key.public_raw));
    request.mutable_signature()->set_signature(signature.ok() ? *signature : "");
    return request;
  }

  smbfleet::v1::ProposeChangeRequest ForFs01() {
    smbfleet::v1::ProposeChangeRequest req;
    req.add_hosts("fs01");
    auto* s = req.add_settings();
    s->set_setting("server.smb1Enabled");
    s->set_value("false");
    return req;
  }

  Principal As(const std::string& name, const std::string& role) {
    return PrincipalFromIdentity({name, "operator", role});
  }

  MemoryChangeStore changes_{&compliance_};
  MemoryApproverKeyStore keys_;
  std::map<std::string, Ed25519Key> people_keys_;
  changes::ChangeService workflow_{&changes_, &hosts_, &compliance_, nullptr, {}};
  changes::OrderDispatcher dispatcher_{&changes_, &router_};
  LocalOrderSignal signal_{
      [this](const std::vector<std::string>& hosts) { dispatcher_.HostsHaveOrders(hosts); }};
  AdminApi changes_api_{&hosts_, &compliance_, &router_, &changes_, &workflow_};
};

TEST_F(AdminApiChangesTest, RolesGateEachCallAndHostsShowDesiredVsApplied) {
  Report("fs01", 1);
  EXPECT_TRUE(absl::IsPermissionDenied(
      changes_api_.ProposeChange(As("vic", "viewer"), ForFs01()).status()));
  auto proposed = changes_api_.ProposeChange(As("pat", "proposer"), ForFs01());
  ASSERT_TRUE(proposed.ok()) << proposed.status();
  const std::string id = proposed->change().id();

  smbfleet::v1::ApproveChangeRequest approve;
  approve.set_id(id);
  auto viewer = changes_api_.ApproveChange(As("vic", "viewer"), approve);
  EXPECT_TRUE(absl::IsPermissionDenied(viewer.status())) << viewer.status();
  EXPECT_THAT(std::string(viewer.status().message()), HasSubstr("approver"));
  auto own = changes_api_.ApproveChange(As("pat", "approver"), SignedBy("pat", approve));
  EXPECT_TRUE(absl::IsFailedPrecondition(own.status())) << own.status();

  router_.connected = {"fs01"};
  auto approved = changes_api_.ApproveChange(As("ann", "approver"), SignedBy("ann", approve));
  ASSERT_TRUE(approved.ok()) << approved.status();
  ASSERT_EQ(router_.sent["fs01"].size(), 1u);
  EXPECT_EQ(router_.sent["fs01"][0].change_order().change_id(), id);

  auto hosts = changes_api_.ListHosts(operator_, {});
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(hosts->hosts_size(), 1);
  EXPECT_EQ(hosts->hosts(0).change_status().desired_change_id(), id);
  EXPECT_TRUE(hosts->hosts(0).change_status().applied_change_id().empty());

  smbfleet::v1::GetChangeRequest get;
  get.set_id(id);
  auto shown = changes_api_.GetChange(As("vic", "viewer"), get);
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(shown->change().state(), smbfleet::v1::CHANGE_STATE_ROLLING_OUT);
  get.set_id("nope");
  EXPECT_TRUE(absl::IsNotFound(changes_api_.GetChange(As("vic", "viewer"), get).status()));
  EXPECT_EQ(changes_api_.ListChanges(As("vic", "viewer"), {})->changes_size(), 1);
  smbfleet::v1::ListAuditRequest audit;
  audit.set_change_id(id);
  auto entries = changes_api_.ListAudit(As("vic", "viewer"), audit);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->entries_size(), 3);
  EXPECT_EQ(entries->entries(1).actor(), "ann");
  EXPECT_TRUE(absl::IsPermissionDenied(changes_api_.ListAudit(agent_, audit).status()));
}

TEST_F(AdminApiChangesTest, SeveralRolesActWithTheRoleTheCallNeedsButNeverOnTheirOwnChange) {
  Report("fs01", 1);
  PeerIdentity id{"max", "operator", "proposer", {"proposer", "approver"}};
  const Principal max = PrincipalFromIdentity(id);
  auto proposed = changes_api_.ProposeChange(max, ForFs01());
  ASSERT_TRUE(proposed.ok()) << proposed.status();
  smbfleet::v1::ApproveChangeRequest approve;
  approve.set_id(proposed->change().id());
  auto own = changes_api_.ApproveChange(max, SignedBy("max", approve));
  EXPECT_TRUE(absl::IsFailedPrecondition(own.status())) << own.status();
  EXPECT_EQ(changes::RefusalOf(own.status()), changes::Refusal::kOwnChange);

  // Someone else's change the same person may approve.
  auto other = changes_api_.ProposeChange(As("pat", "proposer"), ForFs01());
  ASSERT_TRUE(other.ok()) << other.status();
  approve.set_id(other->change().id());
  auto approved = changes_api_.ApproveChange(max, SignedBy("max", approve));
  EXPECT_TRUE(approved.ok()) << approved.status();
}

TEST_F(AdminApiChangesTest, AdminsRegisterListAndRevokeApproverKeys) {
  auto key = GenerateEd25519Key();
  ASSERT_TRUE(key.ok());
  smbfleet::v1::RegisterApproverKeyRequest reg;
  reg.set_name("Ann");
  reg.set_public_key(key->public_raw);
  EXPECT_TRUE(absl::IsPermissionDenied(
      changes_api_.RegisterApproverKey(As("ann", "approver"), reg).status()));
  smbfleet::v1::RegisterApproverKeyRequest bad = reg;
  bad.set_name("ann\nroot");
  auto bad_name = changes_api_.RegisterApproverKey(As("root", "admin"), bad);
  EXPECT_TRUE(absl::IsInvalidArgument(bad_name.status())) << bad_name.status();
  EXPECT_THAT(std::string(bad_name.status().message()), HasSubstr("name:"));
  bad = reg;
  bad.set_public_key("short");
  auto bad_key = changes_api_.RegisterApproverKey(As("root", "admin"), bad);
  EXPECT_TRUE(absl::IsInvalidArgument(bad_key.status())) << bad_key.status();
  EXPECT_THAT(std::string(bad_key.status().message()), HasSubstr("public_key:"));

  auto registered = changes_api_.RegisterApproverKey(As("root", "admin"), reg);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(registered->key().name(), "ann");  // operator names compare without case
  EXPECT_EQ(registered->key().key_id(), KeyId(key->public_raw));
  EXPECT_EQ(registered->key().added_by(), "root");
  EXPECT_TRUE(
      absl::IsAlreadyExists(changes_api_.RegisterApproverKey(As("root", "admin"), reg).status()));

  auto listed = changes_api_.ListApproverKeys(As("vic", "viewer"), {});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->keys_size(), 1);
  EXPECT_EQ(listed->keys(0).public_key(), key->public_raw);

  smbfleet::v1::RevokeApproverKeyRequest revoke;
  revoke.set_key_id(registered->key().key_id());
  EXPECT_TRUE(absl::IsInvalidArgument(
      changes_api_.RevokeApproverKey(As("root", "admin"), revoke).status()));
  revoke.set_reason("laptop lost");
  EXPECT_TRUE(absl::IsPermissionDenied(
      changes_api_.RevokeApproverKey(As("vic", "viewer"), revoke).status()));
  auto revoked = changes_api_.RevokeApproverKey(As("root", "admin"), revoke);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->key().revoked_by(), "root");
  EXPECT_EQ(changes_api_.ListApproverKeys(As("vic", "viewer"), {})->keys_size(), 0);
  smbfleet::v1::ListApproverKeysRequest all;
  all.set_include_revoked(true);
  EXPECT_EQ(changes_api_.ListApproverKeys(As("vic", "viewer"), all)->keys_size(), 1);

  // Ann's revoked key no longer approves anything.
  Report("fs01", 1);
  auto proposed = changes_api_.ProposeChange(As("pat", "proposer"), ForFs01());
  ASSERT_TRUE(proposed.ok()) << proposed.status();
  smbfleet::v1::GetChangeRequest get;
  get.set_id(proposed->change().id());
  auto shown = changes_api_.GetChange(As("ann", "approver"), get);
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_FALSE(shown->approval_payload().empty());
  smbfleet::v1::ApproveChangeRequest approve;
  approve.set_id(proposed->change().id());
  approve.mutable_signature()->set_key_id(registered->key().key_id());
  approve.mutable_signature()->set_signature(
      *SignEd25519(key->private_pem, shown->approval_payload()));
  auto refused = changes_api_.ApproveChange(As("ann", "approver"), approve);
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("revoked"));

  smbfleet::v1::ListAuditRequest audit;
  auto entries = changes_api_.ListAudit(As("vic", "viewer"), audit);
  ASSERT_TRUE(entries.ok());
  std::vector<std::string> actions;
  for (const auto& e : entries->entries()) actions.push_back(e.action());
  EXPECT_THAT(actions, ::testing::ElementsAre("approver_key_registered", "approver_key_revoked",
                                              "proposed"));
}

// A change whose hosts were acked `ago` and measured: CPU per byte x`ratios[i]` against a
// predicted x1.25, CPU +3 points against a predicted +2.
void AddMeasuredChange(MemoryChangeStore& store, const std::string& id, absl::Duration ago,
                       const std::vector<double>& ratios) {
  smbfleet::v1::Change c;
  c.set_id(id);
  c.set_state(smbfleet::v1::CHANGE_STATE_COMPLETED);
  c.set_proposed_by("pat");
  for (size_t i = 0; i < ratios.size(); ++i) {
    auto* h = c.add_hosts();
    h->set_host(absl::StrCat("fs0", i + 1));
    h->set_state(smbfleet::v1::HOST_CHANGE_STATE_APPLIED);
    h->mutable_finished_at()->set_seconds(absl::ToUnixSeconds(absl::Now() - ago));
    h->mutable_impact()->mutable_cost()->set_before("signing AES_128_GMAC");
    h->mutable_impact()->mutable_cost()->set_after("encryption AES_128_GCM");
  }
  ASSERT_TRUE(store.CreateChange(c, {}).ok());
  for (size_t i = 0; i < ratios.size(); ++i) {
    smbfleet::v1::MeasuredImpact m;
    m.set_prediction_known(true);
    m.set_predicted_cpu_ratio(1.25);
    m.set_predicted_cpu_change_points(2);
    m.set_cpu_per_byte_ratio(ratios[i]);
    m.set_cpu_change_points(3);
    auto wrote = store.UpdateHostCounters(
        id, absl::StrCat("fs0", i + 1),
        [&](const smbfleet::v1::Change&,
            const smbfleet::v1::ChangeHost&) -> absl::StatusOr<HostCounters> {
          HostCounters out;
          out.measured = m;
          return out;
        });
    ASSERT_TRUE(wrote.ok()) << wrote;
  }
}

TEST_F(AdminApiChangesTest, CalibrationIsReadByViewersAndSavedWithItsAuditByApproversOrAdmins) {
  AddMeasuredChange(changes_, "chg-a", absl::Hours(1), {1.5, 1.4, 1.6});
  AddMeasuredChange(changes_, "chg-old", absl::Hours(24 * 40), {2.5});

  auto now = changes_api_.CostModelCalibration(As("vic", "viewer"), {});
  ASSERT_TRUE(now.ok()) << now.status();
  const smbfleet::v1::CostModelCalibration& c = now->calibration();
  EXPECT_EQ(c.id(), 0);
  EXPECT_EQ(c.input_count(), 3u);  // chg-old is older than the default 30 days
  EXPECT_FALSE(c.truncated());
  EXPECT_EQ(c.inputs_size(), 0);
  EXPECT_NEAR(static_cast<double>(c.since().seconds()),
              static_cast<double>(absl::ToUnixSeconds(absl::Now() - absl::Hours(24 * 30))), 60);
  ASSERT_EQ(c.groups_size(), 1);
  const auto& g = c.groups(0);
  EXPECT_EQ(g.platform(), "unknown");  // no host store entry
  EXPECT_EQ(g.protection_before(), "signing AES_128_GMAC");
  EXPECT_EQ(g.changes(), 3u);
  EXPECT_NEAR(g.cpu_change_points_error(), 1.0, 1e-9);
  EXPECT_NEAR(g.suggested_cpu_per_byte_factor(), 1.5 / 1.25, 1e-9);

  smbfleet::v1::CostModelCalibrationRequest longer;
  longer.mutable_since()->set_seconds(60 * 86400);
  EXPECT_EQ(
      changes_api_.CostModelCalibration(As("vic", "viewer"), longer)->calibration().input_count(),
      4u);
  smbfleet::v1::CostModelCalibrationRequest negative;
  negative.mutable_since()->set_seconds(-5);
  auto refused = changes_api_.CostModelCalibration(As("vic", "viewer"), negative);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("since"));

  // Saving corrects later proposals: not for viewers nor proposers.
  for (const char* role : {"viewer", "proposer", ""}) {
    auto denied = changes_api_.SaveCostModelCalibration(As("pat", role), {});
    EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << role << ": " << denied.status();
  }
  EXPECT_TRUE(absl::IsPermissionDenied(changes_api_.CostModelCalibration(agent_, {}).status()));
  EXPECT_TRUE(
      absl::IsPermissionDenied(changes_api_.ListCostModelCalibrations(agent_, {}).status()));

  auto saved = changes_api_.SaveCostModelCalibration(As("carol", "approver"), {});
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->calibration().id(), 1);
  EXPECT_EQ(saved->calibration().saved_by(), "carol");
  EXPECT_EQ(saved->calibration().input_count(), 3u);
  smbfleet::v1::SaveCostModelCalibrationRequest save_longer;
  *save_longer.mutable_since() = longer.since();
  auto by_admin = changes_api_.SaveCostModelCalibration(As("root", "admin"), save_longer);
  ASSERT_TRUE(by_admin.ok()) << by_admin.status();
  EXPECT_EQ(by_admin->calibration().id(), 2);

  auto history = changes_api_.ListCostModelCalibrations(As("vic", "viewer"), {});
  ASSERT_TRUE(history.ok()) << history.status();
  ASSERT_EQ(history->calibrations_size(), 2);
  EXPECT_EQ(history->calibrations(0).id(), 2);
  EXPECT_EQ(history->calibrations(0).input_count(), 4u);
  EXPECT_EQ(history->calibrations(1).saved_by(), "carol");
  EXPECT_EQ(history->calibrations(1).groups_size(), 1);

  auto audit = changes_api_.ListAudit(As("vic", "viewer"), {});
  ASSERT_TRUE(audit.ok()) << audit.status();
  std::vector<std::string> saves;
  for (const auto& e : audit->entries()) {
    if (e.action() == "cost_model_calibrated") saves.push_back(e.actor() + ": " + e.detail());
  }
  EXPECT_THAT(saves,
              ::testing::ElementsAre(
                  "carol: 1 host classes (1 with a factor) from 3 change hosts (calibration 1)",
                  "root: 1 host classes (1 with a factor) from 4 change hosts (calibration 2)"));
}

TEST_F(AdminApiChangesTest, WithoutAWorkflowChangeCallsAreUnimplemented) {
  auto r = api_.ProposeChange(As("pat", "proposer"), ForFs01());
  EXPECT_TRUE(absl::IsUnimplemented(r.status())) << r.status();
  // Authorization still comes first.
  EXPECT_TRUE(absl::IsPermissionDenied(api_.ProposeChange(agent_, ForFs01()).status()));
}

TEST_F(AdminApiChangesTest, ApprovedWaiverHidesAFindingThatIncludeWaivedShows) {
  auto policy = testing::TinyPolicy();
  pipeline_ = std::make_unique<ReportPipeline>(&hosts_, &compliance_, &policy);
  auto report = [&](int n) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12)));
    r.mutable_posture()->mutable_server()->set_require_signing(false);
    ASSERT_TRUE(pipeline_->Ingest("fs01", r).ok());
  };
  report(1);  // signing not required: a finding
  smbfleet::v1::ListFindingsRequest findings;
  findings.set_rule_id("server-signing-required");
  ASSERT_EQ(changes_api_.ListFindings(operator_, findings)->findings_size(), 1);

  smbfleet::v1::RequestWaiverRequest request;
  auto* w = request.mutable_waiver();
  w->set_rule_id("server-signing-required");
  w->set_host("fs01");
  w->set_justification("archive share, read-only");
  w->set_ticket("CHG-7");
  w->mutable_expires_at()->set_seconds(absl::ToUnixSeconds(absl::Now() + absl::Hours(24)));
  auto requested = changes_api_.RequestWaiver(As("pat", "proposer"), request);
  ASSERT_TRUE(requested.ok()) << requested.status();
  smbfleet::v1::ApproveWaiverRequest approve;
  approve.set_id(requested->waiver().id());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      changes_api_.ApproveWaiver(As("pat", "approver"), approve).status()));
  EXPECT_TRUE(
      absl::IsPermissionDenied(changes_api_.ApproveWaiver(As("vic", "viewer"), approve).status()));
  ASSERT_TRUE(changes_api_.ApproveWaiver(As("ann", "approver"), approve).ok());
  report(2);  // evaluated again with the waiver

  EXPECT_EQ(changes_api_.ListFindings(operator_, findings)->findings_size(), 0);
  findings.set_include_waived(true);
  auto shown = changes_api_.ListFindings(operator_, findings);
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_EQ(shown->findings_size(), 1);
  EXPECT_EQ(shown->findings(0).waiver_id(), requested->waiver().id());
  smbfleet::v1::ListWaiversRequest list;
  EXPECT_EQ(changes_api_.ListWaivers(As("vic", "viewer"), list)->waivers_size(), 1);
}

}  // namespace
}  // namespace smbfleet::collector

namespace smbfleet::collector {
namespace {

// Readiness over the in-memory stores: the same code reads PostgreSQL through the interfaces.
class ReadinessTest : public ::testing::Test {
 protected:
  explicit ReadinessTest(policy::Policy policy = testing::PlanningPolicy())
      : policy_(std::move(policy)) {}

  void Report(const std::string& host, int n, std::vector<smbfleet::v1::Session> sessions,
              std::vector<smbfleet::v1::Event> events = {}) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12)));
    r.mutable_posture()->mutable_server()->set_require_signing(false);
    r.mutable_posture()->mutable_server()->set_enable_signing(true);
    for (auto& s : sessions) *r.mutable_posture()->add_sessions() = s;
    for (auto& e : events) *r.mutable_posture()->add_events() = e;
    auto result = pipeline_.Ingest(host, r);
    ASSERT_TRUE(result.ok()) << result.status();
  }

  static smbfleet::v1::Session Session(const std::string& id, const std::string& name,
                                       smbfleet::v1::Protection signing) {
    smbfleet::v1::Session s;
    s.set_session_id(id);
    s.set_client_address("10.0.0.7");
    s.set_client_name(name);
    s.set_user("CORP\\bob");
    s.set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
    s.set_signing(signing);
    return s;
  }

  Principal viewer_ = PrincipalFromIdentity({"alice", "operator", "viewer"});
  policy::Policy policy_;
  MemoryHostStore hosts_;
  MemoryComplianceStore compliance_{&hosts_};
  MemoryChangeStore changes_{&compliance_};
  FakeRouter router_;
  ReportPipeline pipeline_{&hosts_, &compliance_, &policy_};
  changes::ChangeService workflow_{&changes_, &hosts_, &compliance_, &policy_, {}};
  AdminApi api_{&hosts_, &compliance_, &router_, &changes_, &workflow_};
};

TEST_F(ReadinessTest, ARuleListsEachRefusedClientOnceWithItsHosts) {
  const std::string hostile = "<img src=x onerror=alert(1)>";
  // A guest session cannot sign; an unsigned SMB 3 session simply signs once it must.
  auto guest = Session("11", hostile, smbfleet::v1::PROTECTION_NONE);
  guest.set_guest(true);
  Report("fs01", 1, {guest, Session("12", "will-sign", smbfleet::v1::PROTECTION_NONE)});
  smbfleet::v1::Event audit;  // 3021: the client does not support signing
  audit.set_event_id(3021);
  audit.set_channel("Microsoft-Windows-SMBServer/Audit");
  audit.set_kind("client_no_signing");
  audit.set_client_address("10.0.0.7");
  audit.set_client_name(hostile);
  audit.set_user("CORP\\bob");
  audit.mutable_time()->set_seconds(1'780'000'000);
  Report("fs02", 2, {Session("22", "signed-pc", smbfleet::v1::PROTECTION_FULL)}, {audit});
  smbfleet::v1::GetReadinessRequest req;
  req.set_rule_id("server-signing-required");
  auto got = api_.GetReadiness(viewer_, req);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->hosts_considered(), 2u);
  EXPECT_THAT(got->requirement(), HasSubstr("server.requireSigning"));
  ASSERT_EQ(got->clients_size(), 1) << got->DebugString();  // the signed client is not refused
  const auto& c = got->clients(0);
  EXPECT_EQ(c.client_name(), hostile);  // data, unchanged
  EXPECT_EQ(c.client_address(), "10.0.0.7");
  EXPECT_EQ(c.user(), "CORP\\bob");
  EXPECT_THAT(c.hosts(), ::testing::ElementsAre("fs01", "fs02"));
  EXPECT_EQ(c.reasons_size(), 2) << c.DebugString();  // the guest session and the event
  EXPECT_EQ(c.last_seen().seconds(), 1'780'000'000);
  ASSERT_EQ(c.evidence_size(), 2);
  EXPECT_EQ(c.evidence(0).client_name(), hostile);

  req.set_limit(10000);
  EXPECT_TRUE(absl::IsInvalidArgument(api_.GetReadiness(viewer_, req).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(api_.GetReadiness(viewer_, {}).status()));
  smbfleet::v1::GetReadinessRequest both;
  both.set_rule_id("server-signing-required");
  both.set_change_id("CHG-1");
  EXPECT_TRUE(absl::IsInvalidArgument(api_.GetReadiness(viewer_, both).status()));
  smbfleet::v1::GetReadinessRequest unknown;
  unknown.set_change_id("CHG-404");
  EXPECT_TRUE(absl::IsNotFound(api_.GetReadiness(viewer_, unknown).status()));
  EXPECT_EQ(api_.GetReadiness(PrincipalFromIdentity({"fs01", "agent", ""}), req).status().code(),
            absl::StatusCode::kPermissionDenied);
}

// Client-side rules: the servers the fleet's own clients would be cut off from, one per server
// name over hosts, with the hosts that talk to each, from connections and client audit events.
class ClientReadinessTest : public ReadinessTest {
 protected:
  ClientReadinessTest() : ReadinessTest(ClientPolicy()) {}

  static policy::Policy ClientPolicy() {
    auto p = policy::ParsePolicy("client.yaml", R"(apiVersion: smbfleet/policy/v1
name: baseline
version: "8"
rules:
  - id: client-signing-required
    title: C
    expect: {client.requireSigning: true}
    remediation:
      - {setting: client.requireSigning, value: true, phase: require}
  - id: client-min-dialect-3-1-1
    title: D
    expect: {client.minDialect: {atLeast: SMB_3_1_1}}
    remediation:
      - {setting: client.minDialect, value: SMB_3_1_1, phase: require}
  - id: server-signing-required
    title: S
    expect: {server.requireSigning: true}
    remediation:
      - {setting: server.requireSigning, value: true, phase: require}
)");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : policy::Policy();
  }

  static smbfleet::v1::Connection Conn(const std::string& server, smbfleet::v1::Dialect d,
                                       bool is_signed) {
    smbfleet::v1::Connection c;
    c.set_server_name(server);
    c.set_share_name("scans");
    c.set_user("CORP\\svc");
    c.set_dialect(d);
    c.set_signed_(is_signed);
    c.set_encrypted(false);
    return c;
  }

  void ReportClient(const std::string& host, int n, std::vector<smbfleet::v1::Connection> conns,
                    std::vector<smbfleet::v1::Event> events = {}) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id(absl::StrCat("00000000-0000-4000-8000-", absl::Dec(n, absl::kZeroPad12)));
    auto* p = r.mutable_posture();
    p->mutable_server()->set_require_signing(true);
    p->mutable_client()->set_require_signing(false);
    p->mutable_client()->set_min_dialect(smbfleet::v1::DIALECT_SMB_2_0_2);
    for (auto& c : conns) *p->add_connections() = c;
    for (auto& e : events) *p->add_events() = e;
    auto result = pipeline_.Ingest(host, r);
    ASSERT_TRUE(result.ok()) << result.status();
  }

  smbfleet::v1::GetReadinessResponse Readiness(const std::string& rule) {
    smbfleet::v1::GetReadinessRequest req;
    req.set_rule_id(rule);
    auto got = api_.GetReadiness(viewer_, req);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : smbfleet::v1::GetReadinessResponse();
  }
};

TEST_F(ClientReadinessTest, AClientRuleListsEachServerOnceWithTheHostsThatTalkToIt) {
  smbfleet::v1::Event audit;  // the client's audit: the server does not support signing
  audit.set_event_id(31998);
  audit.set_channel("Microsoft-Windows-SMBClient/Audit");
  audit.set_kind("server_no_signing");
  audit.set_client_name("\\\\NAS01");
  audit.set_client_address("10.0.5.20");
  audit.mutable_time()->set_seconds(1'780'000'000);
  ReportClient("ws1", 1, {Conn("nas01", smbfleet::v1::DIALECT_SMB_2_1, false)});
  ReportClient("ws2", 2,
               {Conn("NAS01", smbfleet::v1::DIALECT_SMB_3_0_2, false),
                Conn("dc01", smbfleet::v1::DIALECT_SMB_3_1_1, true)},
               {audit});

  smbfleet::v1::GetReadinessResponse got = Readiness("client-signing-required");
  EXPECT_EQ(got.side(), "client");
  EXPECT_EQ(got.hosts_considered(), 2u);
  EXPECT_THAT(got.requirement(), HasSubstr("client.requireSigning = true"));
  EXPECT_EQ(got.clients_size(), 0) << got.DebugString();
  ASSERT_EQ(got.servers_size(), 1) << got.DebugString();  // dc01 signs
  const auto& nas = got.servers(0);
  EXPECT_EQ(absl::AsciiStrToLower(nas.server_name()), "nas01");
  EXPECT_EQ(nas.server_address(), "10.0.5.20");
  EXPECT_THAT(nas.hosts(), ::testing::ElementsAre("ws1", "ws2"));
  EXPECT_EQ(nas.reasons_size(), 2) << nas.DebugString();  // the connections and the event
  EXPECT_EQ(nas.first_seen().seconds(), 1'780'000'000);
  EXPECT_EQ(nas.evidence_size(), 3);

  // Raising the client's minimum dialect: the NAS (2.1 and 3.0.2) again, not dc01 (3.1.1).
  got = Readiness("client-min-dialect-3-1-1");
  EXPECT_EQ(got.side(), "client");
  ASSERT_EQ(got.servers_size(), 1) << got.DebugString();
  EXPECT_THAT(got.servers(0).hosts(), ::testing::ElementsAre("ws1", "ws2"));
  EXPECT_THAT(got.servers(0).reasons(), ::testing::Contains("connection with dialect SMB_2_1 "
                                                            "below SMB_3_1_1"));

  // A server-side rule lists clients, never servers; the hosts comply with it here.
  got = Readiness("server-signing-required");
  EXPECT_EQ(got.side(), "server");
  EXPECT_EQ(got.servers_size(), 0);
}

}  // namespace
}  // namespace smbfleet::collector
