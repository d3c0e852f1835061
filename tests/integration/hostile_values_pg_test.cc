// Values that would break a statement they were pasted into — quotes, backslashes, `$1`,
// `');DROP TABLE`, array and JSON syntax, the word NULL, unicode, a 10 KB message — written by
// the PostgreSQL stores and read back exactly: an evaluation (SaveEvaluation and a page of
// SaveEvaluations) and a change through its workflow (create, update, hosts, counters, audit,
// host statuses, waivers, a cost model calibration). Every value is bound as a parameter.
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/ingest/digest.h"
#include "collector/store/postgres/pg_store.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::MessageDifferencer;
using ::smbfleet::testing::CreateTestDatabase;

constexpr int64_t kT0 = 1'800'000'000;

// About 10 KB of everything below, ASCII and not.
std::string Big() {
  std::string out;
  while (out.size() < 10 * 1024) out += "'\\\"$1 ');DROP TABLE hosts;-- {NULL,\"x\"} ü共🚀 ";
  return out;
}

// Distinct, none blank (ids, names and actors must not be).
const std::vector<std::string>& Hostile() {
  static const auto* const kValues = new std::vector<std::string>{
      "O'Brien's \"share\" ''",
      "back\\slash \\\\ \\' \\x41 \\N",
      "$1 $2::text $$dollar$$ $tag$ :name ?",
      "');DROP TABLE changes;--",
      "x'); DELETE FROM audit_log; SELECT ('",
      "{\"a\",NULL,\"b\"} (1,2) [3]",
      "NULL",
      "ünïcödé 共享 Ελληνικά 🚀 \u202e",
      "tab\tnewline\nreturn\r end",
      Big(),
  };
  return *kValues;
}

google::protobuf::Timestamp Ts(int64_t seconds) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(123000);  // whole microseconds, as PostgreSQL keeps them
  return ts;
}

std::string Diff(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  std::string out;
  MessageDifferencer d;
  d.ReportDifferencesToString(&out);
  return d.Compare(a, b) ? "" : out;
}

// Sets every field of `m` (one element per repeated field or map): strings to the hostile
// values in turn, bytes to every byte value, timestamps to whole microseconds.
void FillHostile(google::protobuf::Message* m, int depth, size_t* n) {
  using FD = google::protobuf::FieldDescriptor;
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  if (d->full_name() == "google.protobuf.Timestamp") {
    r->SetInt64(m, d->FindFieldByName("seconds"), kT0 + static_cast<int64_t>(++*n));
    r->SetInt32(m, d->FindFieldByName("nanos"), 123000);
    return;
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const FD* f = d->field(i);
    const bool rep = f->is_repeated();
    ++*n;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_MESSAGE:
        if (depth < 4) {
          FillHostile(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), depth + 1, n);
        }
        break;
      case FD::CPPTYPE_INT32:
        rep ? r->AddInt32(m, f, 7) : r->SetInt32(m, f, 7);
        break;
      case FD::CPPTYPE_INT64:
        rep ? r->AddInt64(m, f, 7) : r->SetInt64(m, f, 7);
        break;
      case FD::CPPTYPE_UINT32:
        rep ? r->AddUInt32(m, f, 7) : r->SetUInt32(m, f, 7);
        break;
      case FD::CPPTYPE_UINT64:
        rep ? r->AddUInt64(m, f, 7) : r->SetUInt64(m, f, 7);
        break;
      case FD::CPPTYPE_DOUBLE:
        rep ? r->AddDouble(m, f, 0.25) : r->SetDouble(m, f, 0.25);
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
        std::string s;
        if (f->type() == FD::TYPE_BYTES) {
          for (int b = 0; b < 256; ++b) s += static_cast<char>(b);
        } else {
          s = Hostile()[*n % Hostile().size()];
        }
        rep ? r->AddString(m, f, s) : r->SetString(m, f, s);
        break;
      }
    }
  }
}

class HostileValuesPgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto stores = NewPgStore(dsn_, 2);
    ASSERT_TRUE(stores.ok()) << stores.status();
    stores_ = *std::move(stores);
  }

  // Rows of `sql` (with one parameter, `arg`), each row's columns as text ("<null>" for NULL).
  std::vector<std::vector<std::string>> Rows(const std::string& sql, const std::string& arg) {
    pqxx::connection conn(dsn_);
    pqxx::read_transaction tx(conn);
    std::vector<std::vector<std::string>> out;
    for (const auto& row : tx.exec_params(sql, arg)) {
      auto& cells = out.emplace_back();
      for (const auto& f : row) cells.push_back(f.is_null() ? "<null>" : f.as<std::string>());
    }
    return out;
  }

  std::string dsn_;
  Stores stores_;
};

TEST_F(HostileValuesPgTest, AnEvaluationRoundTripsExactly) {
  const auto& bad = Hostile();
  const std::string& policy = bad[2];
  const std::string& version = bad[3];
  ASSERT_TRUE(stores_.compliance->ActivatePolicy(policy, version, bad[4]).ok());

  // Two hosts: one written by SaveEvaluation, one by a page of SaveEvaluations.
  const std::vector<std::string> hosts = {absl::StrCat("fs-", bad[0]), absl::StrCat("fs-", bad[5])};
  std::vector<v1::HostEvaluation> evaluations(hosts.size());
  std::vector<EvaluationWrite> writes(hosts.size());
  for (size_t h = 0; h < hosts.size(); ++h) {
    v1::Posture posture;
    posture.mutable_host()->set_hostname(hosts[h]);
    posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
    for (const std::string& name : bad) {
      auto* share = posture.add_shares();
      share->set_name(name);
      share->set_path(absl::StrCat("/srv/", name));
    }
    IncomingReport r;
    r.host = hosts[h];
    r.report_id = absl::StrCat("00000000-0000-4000-8000-00000000000", h);
    r.reason = bad[6];
    r.posture = &posture;
    r.digest = PostureDigest(posture);
    r.size_bytes = posture.ByteSizeLong();
    r.received_at = absl::Now();
    ASSERT_TRUE(stores_.hosts->SaveReport(r).ok()) << hosts[h];

    v1::HostEvaluation& eval = evaluations[h];
    eval.set_hostname(hosts[h]);
    eval.set_policy_name(policy);
    eval.set_policy_version(version);
    *eval.mutable_evaluated_at() = Ts(kT0);
    EvaluationWrite& w = writes[h];
    for (size_t i = 0; i < bad.size(); ++i) {
      const std::string& share = bad[i];
      const std::string& other = bad[(i + 1) % bad.size()];
      auto* c = eval.add_classifications();
      c->set_share(share);
      c->set_classification(other);
      c->set_rule(bad[(i + 2) % bad.size()]);
      auto* result = eval.add_results();
      result->set_rule_id(other);
      result->set_share(share);
      result->set_classification(other);
      result->set_severity(v1::SEVERITY_HIGH);
      // Every other result waived by a waiver whose id is hostile too.
      result->set_status(i % 2 == 0 ? v1::COMPLIANCE_STATUS_NON_COMPLIANT
                                    : v1::COMPLIANCE_STATUS_WAIVED);
      if (i % 2 == 1) result->set_waiver_id(share);
      result->set_message(bad[(i + 3) % bad.size()]);
      result->mutable_cis()->set_ws2022(bad[(i + 4) % bad.size()]);
      result->mutable_cis()->set_ws2025(bad[(i + 5) % bad.size()]);
      size_t n = i;
      FillHostile(result->add_evidence(), 0, &n);
      FillHostile(result->add_evidence(), 0, &n);
      v1::StatusTransition& t = w.transitions.emplace_back();
      t.set_rule_id(other);
      t.set_share(share);
      t.set_classification(other);
      t.set_policy_version(version);
      t.set_to_status(result->status());
    }
    w.host = hosts[h];
    w.evaluation = &eval;
    w.evaluation_key = bad[(h + 7) % bad.size()];
    auto key = stores_.compliance->EvaluationKey(hosts[h]);
    ASSERT_TRUE(key.ok()) << key.status();
    w.expected_key = *key;
  }
  ASSERT_TRUE(stores_.compliance->SaveEvaluation(writes[0]).ok());
  auto paged = stores_.compliance->SaveEvaluations({writes[1]});
  ASSERT_TRUE(paged.ok()) << paged.status();
  ASSERT_TRUE((*paged)[0].ok()) << (*paged)[0];

  for (size_t h = 0; h < hosts.size(); ++h) {
    SCOPED_TRACE(h == 0 ? "SaveEvaluation" : "SaveEvaluations");
    const v1::HostEvaluation& eval = evaluations[h];
    EXPECT_EQ(*stores_.compliance->EvaluationKey(hosts[h]), writes[h].evaluation_key);

    // Findings (non-compliant) and waived findings carry the results' strings and evidence.
    std::map<std::pair<std::string, std::string>, v1::Finding> found;
    auto findings = stores_.compliance->ListFindings(hosts[h], "", 1000);
    ASSERT_TRUE(findings.ok()) << findings.status();
    auto waived = stores_.compliance->ListWaivedFindings(hosts[h], "", 1000);
    ASSERT_TRUE(waived.ok()) << waived.status();
    for (const auto* list : {&*findings, &*waived}) {
      for (const v1::Finding& f : *list) found[{f.rule_id(), f.share()}] = f;
    }
    ASSERT_EQ(found.size(), static_cast<size_t>(eval.results_size()));
    for (const v1::RuleResult& r : eval.results()) {
      SCOPED_TRACE(r.share().substr(0, 40));
      auto it = found.find({r.rule_id(), r.share()});
      ASSERT_NE(it, found.end());
      const v1::Finding& f = it->second;
      EXPECT_EQ(f.host(), hosts[h]);
      EXPECT_EQ(f.classification(), r.classification());
      EXPECT_EQ(f.message(), r.message());
      EXPECT_EQ(f.policy_version(), version);
      ASSERT_EQ(f.evidence_size(), r.evidence_size());
      for (int e = 0; e < r.evidence_size(); ++e) {
        EXPECT_EQ(Diff(r.evidence(e), f.evidence(e)), "");
      }
    }

    // What findings do not show: waiver ids, CIS references, transitions, classifications.
    std::vector<std::vector<std::string>> want_results, want_transitions, want_shares;
    for (const v1::RuleResult& r : eval.results()) {
      want_results.push_back({r.rule_id(), r.share(),
                              r.waiver_id().empty() ? "<null>" : r.waiver_id(), r.cis().ws2022(),
                              r.cis().ws2025(), policy, version});
    }
    for (const v1::StatusTransition& t : writes[h].transitions) {
      want_transitions.push_back({t.rule_id(), t.share(), t.classification(), version, policy});
    }
    for (const v1::ShareClassification& c : eval.classifications()) {
      want_shares.push_back(
          {c.share(), absl::StrCat("/srv/", c.share()), c.classification(), c.rule()});
    }
    EXPECT_EQ(Rows("SELECT r.rule_id, r.share_name, r.waiver_id, r.cis_ws2022, r.cis_ws2025, "
                   "r.policy_name, r.policy_version FROM compliance_results r JOIN hosts h ON "
                   "h.id = r.host_id WHERE h.name = $1 ORDER BY r.evaluated_at, r.ctid",
                   hosts[h]),
              want_results);
    EXPECT_EQ(Rows("SELECT t.rule_id, t.share_name, t.classification, t.policy_version, "
                   "t.policy_name FROM compliance_transitions t JOIN hosts h ON h.id = t.host_id "
                   "WHERE h.name = $1 ORDER BY t.id",
                   hosts[h]),
              want_transitions);
    EXPECT_EQ(Rows("SELECT s.name, s.path, s.classification, s.classification_rule FROM "
                   "host_shares s JOIN hosts h ON h.id = s.host_id WHERE h.name = $1 "
                   "ORDER BY s.ctid",
                   hosts[h]),
              want_shares);
  }
}

TEST_F(HostileValuesPgTest, AChangeRoundTripsExactlyThroughItsWorkflow) {
  const auto& bad = Hostile();
  ChangeStore& store = *stores_.changes;
  // A change that the hostile one names as its rollback.
  v1::Change base;
  base.set_id(bad[0]);
  base.set_state(v1::CHANGE_STATE_PROPOSED);
  base.set_proposed_by(bad[1]);
  ASSERT_TRUE(store.CreateChange(base, {}).ok());

  v1::Change c;
  size_t n = 0;
  FillHostile(&c, 0, &n);
  c.set_id(bad[3]);
  c.set_proposed_by(bad[4]);
  c.set_rollback_of(bad[0]);
  c.set_rolled_back_by(bad[0]);
  ASSERT_EQ(c.approvals_size(), 1);
  c.mutable_approvals(0)->set_approver(bad[5]);
  ASSERT_EQ(c.hosts_size(), 1);
  v1::ChangeHost* host = c.mutable_hosts(0);
  host->set_host(bad[6]);
  host->set_message(bad[9]);
  v1::AuditEntry proposed;
  FillHostile(&proposed, 0, &n);
  proposed.set_seq(0);
  proposed.set_change_id(c.id());
  proposed.set_waiver_id("");
  ASSERT_TRUE(store.CreateChange(c, {proposed}).ok());
  auto got = store.GetChange(c.id());
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(c, **got), "");

  // A workflow step: new strings on the change, the host dispatched with a hostile nonce, a
  // second approval.
  v1::Change next = c;
  next.set_version(c.version() + 1);
  next.set_reason(bad[7]);
  next.set_halt_reason(bad[8]);
  host = next.mutable_hosts(0);
  host->set_state(v1::HOST_CHANGE_STATE_DISPATCHED);
  host->set_nonce(bad[2]);
  *host->mutable_order_not_after() = Ts(kT0 + 86400);
  auto* second = next.add_approvals();
  second->set_approver(bad[9]);
  second->set_comment(bad[0]);
  second->set_signature(std::string("\0'\\\"$1", 6));
  *second->mutable_at() = Ts(kT0 + 5);
  v1::AuditEntry approved = proposed;
  approved.set_detail(bad[1]);
  auto updated = store.UpdateChange(c.id(), [&](const v1::Change&) -> absl::StatusOr<ChangeUpdate> {
    ChangeUpdate u;
    u.change = next;
    u.audit.push_back(approved);
    return u;
  });
  ASSERT_TRUE(updated.ok()) << updated.status();
  got = store.GetChange(c.id());
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ(Diff(next, **got), "");

  auto pending = store.PendingForHosts({bad[6], bad[1]}, absl::FromUnixSeconds(kT0));
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 1u);
  ASSERT_EQ(pending->at(bad[6]).size(), 1u);
  EXPECT_EQ(pending->at(bad[6])[0].hosts(0).nonce(), bad[2]);
  EXPECT_EQ(pending->at(bad[6])[0].approvals_size(), 2);

  // The host's ack, with a 10 KB message, then its counters.
  ASSERT_TRUE(
      store
          .UpdateChangeHosts(c.id(), {bad[6], bad[2]},
                             [&](const v1::Change& change, const std::vector<v1::ChangeHost>& mine,
                                 const OtherHosts&) -> absl::StatusOr<std::optional<HostsUpdate>> {
                               EXPECT_EQ(mine.size(), 1u);
                               HostsUpdate u;
                               u.change = change;
                               v1::ChangeHost& h = u.hosts.emplace_back(mine.at(0));
                               h.set_state(v1::HOST_CHANGE_STATE_FAILED);
                               h.set_message(Big());
                               *h.mutable_finished_at() = Ts(kT0 + 60);
                               return u;
                             })
          .ok());
  auto statuses = store.HostStatuses({bad[6], bad[3]});
  ASSERT_TRUE(statuses.ok()) << statuses.status();
  ASSERT_EQ(statuses->size(), 1u);
  EXPECT_EQ(statuses->at(bad[6]).last_error(), Big());
  EXPECT_EQ(statuses->at(bad[6]).desired_change_id(), c.id());
  v1::ChangeHost counted;
  FillHostile(&counted, 0, &n);
  ASSERT_TRUE(store
                  .UpdateHostCounters(c.id(), bad[6],
                                      [&](const v1::Change&,
                                          const v1::ChangeHost&) -> absl::StatusOr<HostCounters> {
                                        HostCounters out;
                                        out.before = counted.counters_before();
                                        out.after = counted.counters_after();
                                        out.measured = counted.measured();
                                        return out;
                                      })
                  .ok());
  got = store.GetChange(c.id());
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status();
  EXPECT_EQ((**got).hosts(0).message(), Big());
  EXPECT_EQ(Diff((**got).hosts(0).counters_before(), counted.counters_before()), "");
  EXPECT_EQ(Diff((**got).hosts(0).counters_after(), counted.counters_after()), "");
  EXPECT_EQ(Diff((**got).hosts(0).measured(), counted.measured()), "");

  // The audit log, filtered by a hostile change id.
  AuditQuery by_change;
  by_change.change_id = c.id();
  auto audit = store.ListAudit(by_change);
  ASSERT_TRUE(audit.ok()) << audit.status();
  ASSERT_EQ(audit->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    v1::AuditEntry entry = (*audit)[i];
    entry.set_seq(0);
    EXPECT_EQ(Diff(i == 0 ? proposed : approved, entry), "");
  }
  by_change.change_id = bad[0];
  EXPECT_TRUE(store.ListAudit(by_change)->empty());

  // A waiver requested, then approved, every string hostile.
  v1::Waiver w;
  w.set_id(bad[8]);
  w.set_rule_id(bad[1]);
  w.set_host(bad[6]);
  w.set_share(bad[2]);
  w.set_justification(Big());
  w.set_created_by(bad[3]);
  *w.mutable_created_at() = Ts(kT0 - 60);
  *w.mutable_expires_at() = Ts(kT0 + 86400);
  w.set_state(v1::WAIVER_STATE_REQUESTED);
  w.set_ticket(bad[4]);
  v1::AuditEntry requested = proposed;
  requested.set_change_id("");
  requested.set_waiver_id(w.id());
  ASSERT_TRUE(store.CreateWaiver(w, requested).ok());
  v1::Waiver approved_waiver = w;
  approved_waiver.set_state(v1::WAIVER_STATE_APPROVED);
  approved_waiver.set_approved_by(bad[5]);
  *approved_waiver.mutable_approved_at() = Ts(kT0);
  ASSERT_TRUE(
      store
          .UpdateWaiver(
              w.id(),
              [&](const v1::Waiver&) -> absl::StatusOr<std::pair<v1::Waiver, v1::AuditEntry>> {
                return std::make_pair(approved_waiver, requested);
              })
          .ok());
  auto waivers = store.ListWaivers(/*include_inactive=*/true, absl::FromUnixSeconds(kT0));
  ASSERT_TRUE(waivers.ok()) << waivers.status();
  ASSERT_EQ(waivers->size(), 1u);
  EXPECT_EQ(Diff(approved_waiver, (*waivers)[0]), "");
  AuditQuery by_waiver;
  by_waiver.waiver_id = w.id();
  EXPECT_EQ(store.ListAudit(by_waiver)->size(), 2u);

  // A cost model calibration whose input names hostile change, host and platform.
  v1::CostModelCalibration calibration;
  calibration.set_saved_by(bad[0]);
  *calibration.mutable_since() = Ts(kT0 - 86400);
  v1::CostModelCalibrationInput* input = calibration.add_inputs();
  input->set_change_id(c.id());
  input->set_host(bad[6]);
  input->set_platform(bad[7]);
  input->set_protection_before(bad[8]);
  input->set_protection_after(bad[9]);
  auto id = store.SaveCostModelCalibration(calibration, proposed);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(Rows("SELECT change_id, host, platform, protection_before, protection_after FROM "
                 "cost_model_calibration_inputs WHERE calibration_id = $1::bigint",
                 absl::StrCat(*id)),
            (std::vector<std::vector<std::string>>{{c.id(), bad[6], bad[7], bad[8], bad[9]}}));
  // Nothing was dropped along the way.
  EXPECT_EQ(Rows("SELECT count(*) FROM changes WHERE id <> $1", ""),
            (std::vector<std::vector<std::string>>{{"2"}}));
}

}  // namespace
}  // namespace smbfleet::collector
