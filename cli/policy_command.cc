#include "cli/policy_command.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/files.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "policy/evaluate.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::cli {
namespace {

using google::protobuf::util::TimeUtil;
using policy::PeerConnection;

constexpr size_t kMaxPostureBytes = 64 << 20;
constexpr size_t kMaxPolicyBytes = 4 << 20;

int Usage(std::ostream& err, const std::string& problem) {
  err << "smbfleetctl: policy: " << problem << "\n";
  return 2;
}

absl::StatusOr<policy::Policy> LoadPolicy(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, kMaxPolicyBytes));
  return policy::ParsePolicy(path, text);
}

absl::Status LoadJson(const std::string& path, size_t max_bytes,
                      google::protobuf::Message* message) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, max_bytes));
  return FromJson(text, path, message);
}

}  // namespace

int RunPolicyCheck(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
  if (files.empty()) return Usage(err, "check needs at least one policy file");
  int rc = 0;
  for (const std::string& f : files) {
    auto p = LoadPolicy(f);
    if (!p.ok()) {
      err << p.status().message() << "\n";
      rc = 1;
      continue;
    }
    size_t share_rules = 0, remediable = 0;
    for (const auto& r : p->rules) {
      share_rules += r.share_scoped ? 1 : 0;
      remediable += r.remediation.empty() ? 0 : 1;
    }
    out << f << ": OK: policy " << p->name << " version " << p->version << ", " << p->rules.size()
        << " rules (" << share_rules << " share rules, " << remediable << " with remediation), "
        << p->classification.classes.size() << " classes, " << p->classification.rules.size()
        << " classification rules, " << p->waivers.size() << " waivers\n";
  }
  return rc;
}

namespace {

std::string Ts(const google::protobuf::Timestamp& t) { return TimeUtil::ToString(t); }

void PrintText(const smbfleet::v1::PolicyReport& r, std::ostream& out) {
  const auto& e = r.evaluation();
  out << "host " << e.hostname() << "  policy " << e.policy_name() << " " << e.policy_version()
      << "  evaluated " << Ts(e.evaluated_at()) << "\n";
  out << "  " << e.compliant() << " compliant, " << e.non_compliant() << " non-compliant, "
      << e.waived() << " waived, " << e.unknown() << " unknown, " << e.errors() << " errors, "
      << e.not_applicable() << " not applicable\n";
  for (const auto& c : e.classifications()) {
    out << "  share " << c.share() << ": " << c.classification() << " (" << c.rule() << ")\n";
  }
  for (const auto& res : e.results()) {
    std::string status(policy::StatusName(res.status()));
    out << "  " << status << std::string(status.size() < 15 ? 15 - status.size() : 1, ' ')
        << res.rule_id() << (res.share().empty() ? "" : absl::StrCat(" [", res.share(), "]"));
    if (!res.message().empty()) out << ": " << res.message();
    out << "\n";
    if (res.status() == smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT ||
        res.status() == smbfleet::v1::COMPLIANCE_STATUS_WAIVED) {
      for (const auto& ev : res.evidence()) {
        if (ev.session_id().empty()) continue;
        out << "      session " << ev.session_id() << " " << ev.client_name() << " "
            << ev.client_address() << " " << ev.user() << ": " << ev.field() << " " << ev.observed()
            << " (expected " << ev.expected() << ")\n";
      }
    }
  }
  const auto& plan = r.plan();
  if (plan.steps_size() == 0 && plan.not_remediable_size() == 0) return;
  out << "plan for " << plan.hostname() << ":\n";
  for (const auto& s : plan.steps()) {
    out << "  " << s.order() << ". [" << smbfleet::v1::PlanPhase_Name(s.phase()).substr(11) << "] "
        << s.setting() << (s.share().empty() ? "" : absl::StrCat("[", s.share(), "]")) << ": "
        << (s.expected_current().empty() ? "(unknown)" : s.expected_current()) << " -> "
        << s.value() << "  (rollback "
        << (s.rollback_value().empty() ? "(unknown)" : s.rollback_value()) << "; "
        << absl::StrJoin(s.rule_ids(), ", ") << ")\n";
  }
  if (plan.not_remediable_size() > 0) {
    out << "  needs a person: " << absl::StrJoin(plan.not_remediable(), ", ") << "\n";
  }
  const auto& impact = plan.impact();
  out << "  impact: " << impact.refused_clients() << " clients, " << impact.refused_sessions()
      << " sessions\n";
  for (const auto& c : impact.clients()) {
    out << "    " << c.setting() << ": " << (c.client_name().empty() ? "?" : c.client_name()) << " "
        << c.client_address() << " " << c.user() << ": " << c.reason() << " [" << c.evidence()
        << "]\n";
  }
  out << "  cost: " << impact.cost().summary() << "\n";
}

}  // namespace

int RunPolicyEval(const PolicyFlags& flags, const std::string& format, std::ostream& out,
                  std::ostream& err) {
  const std::string& policy_file = flags.policy_file;
  const std::string& waivers_file = flags.waivers_file;
  const std::string& now_text = flags.now;
  const std::vector<std::string>& postures = flags.postures;
  if (policy_file.empty()) return Usage(err, "eval needs --policy FILE");
  if (postures.empty()) return Usage(err, "eval needs --posture POSTURE.json");
  if (format != "json" && format != "text") {
    return Usage(err, absl::StrCat("--format must be json or text, got '", format, "'"));
  }
  absl::Time now = absl::Now();
  if (!now_text.empty()) {
    google::protobuf::Timestamp ts;
    if (!TimeUtil::FromString(now_text, &ts)) {
      return Usage(err, absl::StrCat("--now: expected an RFC 3339 time such as "
                                     "2026-12-01T00:00:00Z, got '",
                                     now_text, "'"));
    }
    now = absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
  }
  auto pol = LoadPolicy(policy_file);
  if (!pol.ok()) {
    err << pol.status().message() << "\n";
    return 1;
  }
  smbfleet::v1::WaiverList waivers;
  if (!waivers_file.empty()) {
    if (absl::Status st = LoadJson(waivers_file, kMaxPolicyBytes, &waivers); !st.ok()) {
      err << st.message() << "\n";
      return 1;
    }
    for (int i = 0; i < waivers.waivers_size(); ++i) {
      if (absl::Status v = policy::ValidateWaiver(waivers.waivers(i)); !v.ok()) {
        err << waivers_file << ": waivers[" << i << "]: " << v.message() << "\n";
        return 1;
      }
    }
  }
  std::vector<smbfleet::v1::Posture> loaded(postures.size());
  for (size_t i = 0; i < postures.size(); ++i) {
    if (absl::Status st = LoadJson(postures[i], kMaxPostureBytes, &loaded[i]); !st.ok()) {
      err << st.message() << "\n";
      return 1;
    }
    if (loaded[i].host().hostname().empty()) {
      err << postures[i] << ": host.hostname is empty: cannot evaluate an unnamed host\n";
      return 1;
    }
  }
  std::vector<smbfleet::v1::Waiver> waiver_list(waivers.waivers().begin(), waivers.waivers().end());
  smbfleet::v1::PolicyReports reports;
  for (size_t i = 0; i < loaded.size(); ++i) {
    std::vector<PeerConnection> all;
    for (size_t j = 0; j < loaded.size(); ++j) {
      if (j == i) continue;
      for (const auto& c : loaded[j].connections()) {
        all.push_back(PeerConnection{loaded[j].host().hostname(), c});
      }
    }
    auto peers = policy::PeerConnectionsTowards(loaded[i].host(), all);
    auto* r = reports.add_reports();
    policy::EvaluateHostInto(*pol, loaded[i], waiver_list, now, r->mutable_evaluation());
    *r->mutable_plan() = policy::PlanRemediation(*pol, loaded[i], r->evaluation(), peers, now);
  }
  if (format == "json") {
    const google::protobuf::Message& msg =
        reports.reports_size() == 1
            ? static_cast<const google::protobuf::Message&>(reports.reports(0))
            : static_cast<const google::protobuf::Message&>(reports);
    auto json = ToJson(msg);
    if (!json.ok()) {
      err << json.status().message() << "\n";
      return 1;
    }
    out << *json;
    return 0;
  }
  for (const auto& r : reports.reports()) PrintText(r, out);
  return 0;
}

}  // namespace smbfleet::cli
