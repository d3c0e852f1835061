#include "collector/metrics/metrics.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collector/metrics/prometheus_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

using Labels = std::map<std::string, std::string>;

std::vector<PromSample> Scrape(const Metrics& m) {
  auto samples = ParsePrometheusText(m.Text());
  EXPECT_TRUE(samples.ok()) << samples.status();
  return samples.ok() ? *samples : std::vector<PromSample>{};
}

std::string Key(const PromSample& s) {
  std::string k = s.name;
  for (const auto& [name, value] : s.labels) k += "," + name + "=" + value;
  return k;
}

// The samples whose value differs between two scrapes, by Key.
std::map<std::string, double> Moved(const std::vector<PromSample>& before,
                                    const std::vector<PromSample>& after) {
  std::map<std::string, double> old;
  for (const auto& s : before) old[Key(s)] = s.value;
  std::map<std::string, double> moved;
  for (const auto& s : after) {
    auto it = old.find(Key(s));
    if (it == old.end() || it->second != s.value) moved[Key(s)] = s.value;
  }
  return moved;
}

struct Case {
  std::string name;
  std::function<void(Metrics&)> event;
  // Exactly these samples move, to these values.
  std::map<std::string, double> moved;
};

TEST(MetricsTest, EachEventMovesOnlyItsSeries) {
  const std::vector<Case> cases = {
      {"received",
       [](Metrics& m) { m.ReportReceived(); },
       {{"smbfleet_reports_total,result=received", 1}}},
      {"stored",
       [](Metrics& m) { m.ReportSaved(SaveOutcome::kStored); },
       {{"smbfleet_reports_total,result=stored", 1}}},
      {"unchanged",
       [](Metrics& m) { m.ReportSaved(SaveOutcome::kUnchanged); },
       {{"smbfleet_reports_total,result=unchanged", 1}}},
      {"duplicate twice",
       [](Metrics& m) {
         m.ReportSaved(SaveOutcome::kDuplicate);
         m.ReportSaved(SaveOutcome::kDuplicate);
       },
       {{"smbfleet_reports_total,result=duplicate", 2}}},
      {"refused invalid",
       [](Metrics& m) { m.ReportRefused(ReportRefusal::kInvalid); },
       {{"smbfleet_reports_refused_total,reason=invalid", 1}}},
      {"refused busy",
       [](Metrics& m) { m.ReportRefused(ReportRefusal::kBusy); },
       {{"smbfleet_reports_refused_total,reason=busy", 1}}},
      {"refused not stored",
       [](Metrics& m) { m.ReportRefused(ReportRefusal::kNotStored); },
       {{"smbfleet_reports_refused_total,reason=database", 1}}},
      {"refused not agent",
       [](Metrics& m) { m.ReportRefused(ReportRefusal::kNotAgent); },
       {{"smbfleet_reports_refused_total,reason=not_agent", 1}}},
      {"refused unauthenticated",
       [](Metrics& m) { m.ReportRefused(ReportRefusal::kUnauthenticated); },
       {{"smbfleet_reports_refused_total,reason=unauthenticated", 1}}},
      {"agents connected",
       [](Metrics& m) { m.SetAgentsConnected(3); },
       {{"smbfleet_agents_connected", 3}}},
      {"orders sent",
       [](Metrics& m) { m.OrdersSent(2); },
       {{"smbfleet_change_orders_sent_total", 2}}},
      {"ack applied after 3 s",
       [](Metrics& m) { m.OrderAcked(v1::AckChangeRequest::RESULT_APPLIED, absl::Seconds(3)); },
       {{"smbfleet_change_orders_total,result=APPLIED", 1},
        {"smbfleet_order_ack_latency_seconds_count", 1},
        {"smbfleet_order_ack_latency_seconds_sum", 3},
        {"smbfleet_order_ack_latency_seconds_bucket,le=5", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=10", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=30", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=60", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=300", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=900", 1},
        {"smbfleet_order_ack_latency_seconds_bucket,le=+Inf", 1}}},
      {"ack refused, dispatch time unknown",
       [](Metrics& m) { m.OrderAcked(v1::AckChangeRequest::RESULT_REFUSED, std::nullopt); },
       {{"smbfleet_change_orders_total,result=REFUSED", 1}}},
      {"ack unspecified counts nowhere",
       [](Metrics& m) { m.OrderAcked(v1::AckChangeRequest::RESULT_UNSPECIFIED, std::nullopt); },
       {}},
      {"database write error",
       [](Metrics& m) { m.DatabaseError(DatabaseOperation::kWrite); },
       {{"smbfleet_database_errors_total,operation=write", 1}}},
      {"database connect error",
       [](Metrics& m) { m.DatabaseError(DatabaseOperation::kConnect); },
       {{"smbfleet_database_errors_total,operation=connect", 1}}},
      {"pool wait 2 ms",
       [](Metrics& m) { m.DatabasePoolWait(absl::Milliseconds(2)); },
       {{"smbfleet_database_pool_wait_seconds_count", 1},
        {"smbfleet_database_pool_wait_seconds_sum", 0.002},
        {"smbfleet_database_pool_wait_seconds_bucket,le=0.005", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=0.01", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=0.05", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=0.1", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=0.5", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=1", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=5", 1},
        {"smbfleet_database_pool_wait_seconds_bucket,le=+Inf", 1}}},
      {"policy evaluation 0.5 s",
       [](Metrics& m) { m.PolicyEvaluated(absl::Milliseconds(500)); },
       {{"smbfleet_policy_evaluation_seconds_count", 1},
        {"smbfleet_policy_evaluation_seconds_sum", 0.5},
        {"smbfleet_policy_evaluation_seconds_bucket,le=1", 1},
        {"smbfleet_policy_evaluation_seconds_bucket,le=+Inf", 1}}},
      {"queue depth",
       [](Metrics& m) { m.SetIngestQueueDepth(7); },
       {{"smbfleet_ingest_queue_depth", 7}}},
      {"hosts re-evaluated",
       [](Metrics& m) { m.HostsReevaluated(ReevaluationResult::kEvaluated, 3); },
       {{"smbfleet_policy_reevaluated_hosts_total,result=evaluated", 3}}},
      {"hosts found current",
       [](Metrics& m) { m.HostsReevaluated(ReevaluationResult::kCurrent, 500); },
       {{"smbfleet_policy_reevaluated_hosts_total,result=current", 500}}},
      {"re-evaluation running",
       [](Metrics& m) { m.SetReevaluationRunning(true); },
       {{"smbfleet_policy_reevaluation_running", 1}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Metrics m("9.9.9");
    const auto before = Scrape(m);
    c.event(m);
    const auto moved = Moved(before, Scrape(m));
    ASSERT_EQ(moved.size(), c.moved.size()) << testing::PrintToString(moved);
    for (const auto& [key, value] : c.moved) {
      ASSERT_TRUE(moved.count(key))
          << key << " did not move; moved: " << testing::PrintToString(moved);
      EXPECT_DOUBLE_EQ(moved.at(key), value) << key;
    }
  }
}

TEST(MetricsTest, EverySeriesStartsAtZeroWithFixedLabels) {
  Metrics m("1.2.3");
  const auto samples = Scrape(m);
  EXPECT_EQ(FindSample(samples, "smbfleet_build_info", {{"version", "1.2.3"}}), 1);
  for (const char* r : {"received", "stored", "unchanged", "duplicate"}) {
    EXPECT_EQ(FindSample(samples, "smbfleet_reports_total", {{"result", r}}), 0) << r;
  }
  for (const char* r : {"unauthenticated", "not_agent", "invalid", "database", "busy", "gone"}) {
    EXPECT_EQ(FindSample(samples, "smbfleet_reports_refused_total", {{"reason", r}}), 0) << r;
  }
  for (const char* r : {"APPLIED", "FAILED", "PRECONDITION_FAILED", "ROLLED_BACK", "REFUSED"}) {
    EXPECT_EQ(FindSample(samples, "smbfleet_change_orders_total", {{"result", r}}), 0) << r;
  }
  for (const char* op : {"connect", "read", "write"}) {
    EXPECT_EQ(FindSample(samples, "smbfleet_database_errors_total", {{"operation", op}}), 0) << op;
  }
  EXPECT_EQ(FindSample(samples, "smbfleet_agents_connected"), 0);
  EXPECT_EQ(FindSample(samples, "smbfleet_ingest_queue_depth"), 0);
  EXPECT_EQ(FindSample(samples, "smbfleet_order_ack_latency_seconds_count"), 0);
  EXPECT_EQ(FindSample(samples, "smbfleet_database_pool_wait_seconds_count"), 0);
  EXPECT_EQ(FindSample(samples, "smbfleet_policy_evaluation_seconds_count"), 0);
  for (const char* r : {"current", "evaluated", "failed"}) {
    EXPECT_EQ(FindSample(samples, "smbfleet_policy_reevaluated_hosts_total", {{"result", r}}), 0)
        << r;
  }
  EXPECT_EQ(FindSample(samples, "smbfleet_policy_reevaluation_running"), 0);
  // Nothing but the fixed series: no label value can come from outside.
  for (const auto& s : samples) {
    EXPECT_THAT(s.name, testing::StartsWith("smbfleet_"));
  }
}

TEST(MetricsTest, TextHasHelpAndType) {
  Metrics m;
  const std::string text = m.Text();
  EXPECT_THAT(text, testing::HasSubstr("# TYPE smbfleet_reports_total counter"));
  EXPECT_THAT(text, testing::HasSubstr("# TYPE smbfleet_order_ack_latency_seconds histogram"));
  EXPECT_THAT(text, testing::HasSubstr("# TYPE smbfleet_agents_connected gauge"));
  EXPECT_THAT(text, testing::HasSubstr("# HELP smbfleet_database_pool_wait_seconds "));
}

TEST(MetricsTest, NegativeLatencyIsCountedButNotObserved) {
  // A clock step between dispatch and ack (another replica's clock) must not skew the histogram.
  Metrics m;
  m.OrderAcked(v1::AckChangeRequest::RESULT_FAILED, absl::Seconds(-5));
  const auto samples = Scrape(m);
  EXPECT_EQ(FindSample(samples, "smbfleet_change_orders_total", {{"result", "FAILED"}}), 1);
  EXPECT_EQ(FindSample(samples, "smbfleet_order_ack_latency_seconds_count"), 0);
}

}  // namespace
}  // namespace smbfleet::collector
