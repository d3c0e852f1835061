#include "cli/change_render.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/exit_code.h"
#include "cli/render.h"

namespace smbfleet::cli {
namespace {

using smbfleet::v1::Change;
using smbfleet::v1::ChangeHost;

std::string SettingText(const std::string& setting, const std::string& share) {
  return share.empty() ? Clean(setting) : absl::StrCat(Clean(setting), " [", Clean(share), "]");
}

std::string ValueText(const std::string& v) { return v.empty() ? "(unknown)" : Clean(v); }

std::string SourceText(const Change& c) {
  switch (c.source()) {
    case smbfleet::v1::CHANGE_SOURCE_HOSTS:
      return "the hosts' remediation plans";
    case smbfleet::v1::CHANGE_SOURCE_RULE: {
      std::string text = absl::StrCat("every non-compliant host of rule ", Clean(c.rule_id()));
      if (!c.label_selector().empty()) {
        std::vector<std::string> labels;
        for (const auto& [k, v] : c.label_selector()) {
          labels.push_back(absl::StrCat(Clean(k), "=", Clean(v)));
        }
        std::sort(labels.begin(), labels.end());
        absl::StrAppend(&text, " with ", absl::StrJoin(labels, ","));
      }
      return text;
    }
    case smbfleet::v1::CHANGE_SOURCE_SETTINGS:
      return "settings written by hand";
    case smbfleet::v1::CHANGE_SOURCE_ROLLBACK:
      return absl::StrCat("rollback of ", Clean(c.rollback_of()));
    default:
      return "-";
  }
}

std::string OneDecimal(double v) { return absl::StrFormat("%.1f", v); }

// "CPU 11.0%; SMB 50.0 MB/s; available memory 3.20 GiB" of one window, or of two side by side
// ("CPU 11.0% -> 14.0%"); "-" for a figure a window lacks.
std::string CountersText(const smbfleet::v1::CounterSummary* before,
                         const smbfleet::v1::CounterSummary& after) {
  auto figure = [&](auto has, auto text) {
    std::string a = (after.*has)() ? text(after) : "-";
    if (before == nullptr) return a;
    return absl::StrCat((before->*has)() ? text(*before) : "-", " -> ", a);
  };
  using S = smbfleet::v1::CounterSummary;
  return absl::StrCat(
      "CPU ",
      figure(&S::has_cpu_percent, [](const S& s) { return OneDecimal(s.cpu_percent()) + "%"; }),
      "; SMB ",
      figure(&S::has_smb_bytes_per_second,
             [](const S& s) { return OneDecimal(s.smb_bytes_per_second() / 1e6); }),
      " MB/s; available memory ",
      figure(&S::has_available_memory_bytes,
             [](const S& s) {
               return absl::StrFormat("%.2f", static_cast<double>(s.available_memory_bytes()) /
                                                  (1024.0 * 1024 * 1024));
             }),
      " GiB");
}

// Beside the predicted cost: the medians before vs after the apply and the measured effect,
// one figure per line; or how long the after-window still runs.
void RenderMeasured(const ChangeHost& h, std::ostream& out) {
  if (h.has_counters_before() && h.has_counters_after()) {
    out << "  measured: "
        << CountersText(&h.counters_before().summary(), h.counters_after().summary()) << "\n";
    for (const auto& part : absl::StrSplit(h.measured().summary(), "; ", absl::SkipEmpty())) {
      out << "    " << Clean(part) << "\n";
    }
  } else if (h.has_counters_before()) {
    // The after-window is as long as the before-window and starts at the apply.
    const auto& w = h.counters_before();
    const absl::Duration length = absl::Seconds(w.end().seconds() - w.start().seconds());
    const int64_t from =
        h.finished_at().seconds() != 0 ? h.finished_at().seconds() : w.end().seconds();
    out << "  measured: collecting until "
        << absl::FormatTime("%H:%M UTC", absl::FromUnixSeconds(from) + length, absl::UTCTimeZone())
        << "; before: " << CountersText(nullptr, w.summary()) << "\n";
  } else if (h.has_counters_after()) {
    out << "  measured: no before-window; after: "
        << CountersText(nullptr, h.counters_after().summary()) << "\n";
  }
}

std::string ClientText(const smbfleet::v1::AffectedClient& a) {
  std::vector<std::string> parts;
  parts.push_back(a.client_name().empty() ? "?" : Clean(a.client_name()));
  if (!a.client_address().empty()) parts.push_back(Clean(a.client_address()));
  if (!a.user().empty()) parts.push_back(Clean(a.user()));
  if (a.dialect() != smbfleet::v1::DIALECT_UNSPECIFIED) parts.push_back(DialectText(a.dialect()));
  return absl::StrJoin(parts, " ");
}

// "server.requireSigning: reason (evidence; reported by ws17)" under a client.
std::string WhyText(const smbfleet::v1::AffectedClient& a) {
  std::string text = absl::StrCat(SettingText(a.setting(), a.share()), ": ", Clean(a.reason()));
  std::vector<std::string> extra;
  if (!a.evidence().empty()) extra.push_back(Clean(a.evidence()));
  if (!a.reporter().empty()) extra.push_back(absl::StrCat("reported by ", Clean(a.reporter())));
  if (!extra.empty()) absl::StrAppend(&text, " (", absl::StrJoin(extra, "; "), ")");
  return text;
}

// "first seen 2027-01-15 06:10:00Z, last seen 2027-01-15 06:55:00Z", or "" without a time.
std::string SeenText(const smbfleet::v1::AffectedClient& a) {
  if (!a.has_first_seen()) return "";
  return absl::StrCat("first seen ", TimeText(a.first_seen()), ", last seen ",
                      TimeText(a.last_seen()));
}

std::string ApprovalCount(const Change& c) {
  return absl::StrCat(c.approvals_size(), "/", c.approvals_required());
}

void RenderHostDetail(const ChangeHost& h, std::ostream& out) {
  out << "\n" << Clean(h.host()) << "  " << HostChangeStateText(h.state());
  if (h.wave() >= 0) out << "  wave " << h.wave() + 1;
  if (h.rollback_sent()) out << "  rollback sent";
  out << "\n";
  if (h.dispatched_at().seconds() != 0 || h.finished_at().seconds() != 0) {
    out << "  dispatched " << TimeText(h.dispatched_at()) << "  finished "
        << TimeText(h.finished_at()) << "\n";
  }
  if (!h.message().empty()) out << "  message: " << Clean(h.message()) << "\n";
  // What the host's ack reported it has now, next to the plan.
  std::map<std::pair<std::string, std::string>, std::string> after;
  for (const auto& a : h.after()) after[{a.setting(), a.share()}] = a.value();
  for (const auto& s : h.steps()) {
    out << "  " << SettingText(s.setting(), s.share()) << ": " << ValueText(s.expected_current())
        << " -> " << ValueText(s.value());
    auto it = after.find({s.setting(), s.share()});
    if (it != after.end()) out << "  (host reports " << ValueText(it->second) << ")";
    out << "\n";
  }
  if (!h.not_remediable().empty()) {
    std::vector<std::string> rules;
    for (const auto& r : h.not_remediable()) rules.push_back(Clean(r));
    out << "  needs a person: " << absl::StrJoin(rules, ", ") << "\n";
  }
  const auto& impact = h.impact();
  if (impact.clients_size() > 0) {
    out << "  would refuse " << impact.refused_clients() << " client(s), "
        << impact.refused_sessions() << " session(s):\n";
    for (const auto& a : impact.clients()) {
      out << "    " << ClientText(a) << "\n      " << WhyText(a) << "\n";
      if (a.has_first_seen()) out << "      " << SeenText(a) << "\n";
    }
  }
  if (!impact.cost().summary().empty()) {
    out << "  cost: " << Clean(impact.cost().summary());
    if (impact.cost().calibration_id() != 0) {
      out << absl::StrFormat("; calibrated x%.2f (calibration %d)",
                             impact.cost().calibration_factor(), impact.cost().calibration_id());
    }
    out << "\n";
  }
  RenderMeasured(h, out);
}

// "+2.5", "-0.8" points; "-" when unknown.
std::string PointsText(bool has, double v) { return has ? absl::StrFormat("%+.1f", v) : "-"; }
// "x1.30"; "-" when unknown.
std::string RatioText(bool has, double v) { return has ? absl::StrFormat("x%.2f", v) : "-"; }

std::string ClassText(const smbfleet::v1::CostModelCalibrationGroup& g) {
  auto side = [](const std::string& s) { return s.empty() ? std::string("?") : Clean(s); };
  return absl::StrCat(side(g.protection_before()), " -> ", side(g.protection_after()));
}

}  // namespace

void RenderCalibration(const smbfleet::v1::CostModelCalibration& c, std::ostream& out) {
  if (c.id() != 0) {
    out << "calibration " << c.id() << " saved by " << Clean(c.saved_by()) << " at "
        << TimeText(c.saved_at()) << "\n";
  }
  out << "change hosts measured since " << TimeText(c.since()) << ": " << c.input_count();
  if (c.truncated()) out << " (truncated: the newest only)";
  out << "\n";
  if (c.groups_size() == 0) {
    out << "(no change with a measured impact)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"PLATFORM", "PROTECTION", "N", "CPU PTS PRED",
                                                 "CPU PTS MEAS", "ERROR", "CPU/BYTE PRED",
                                                 "CPU/BYTE MEAS", "SUGGESTION"}};
  for (const auto& g : c.groups()) {
    rows.push_back(
        {Clean(g.platform()), ClassText(g), absl::StrCat(g.changes()),
         PointsText(g.has_predicted_cpu_change_points(), g.predicted_cpu_change_points()),
         PointsText(g.has_measured_cpu_change_points(), g.measured_cpu_change_points()),
         PointsText(g.has_cpu_change_points_error(), g.cpu_change_points_error()),
         RatioText(g.has_predicted_cpu_ratio(), g.predicted_cpu_ratio()),
         RatioText(g.has_measured_cpu_per_byte_ratio(), g.measured_cpu_per_byte_ratio()),
         Clean(g.suggestion())});
  }
  Table(rows, out);
}

void RenderCalibrationHistory(const smbfleet::v1::ListCostModelCalibrationsResponse& r,
                              std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "SAVED", "BY", "SINCE", "INPUTS", "CLASSES", "FACTORS"}};
  for (const auto& c : r.calibrations()) {
    std::vector<std::string> factors;
    for (const auto& g : c.groups()) {
      if (!g.has_suggested_cpu_per_byte_factor()) continue;
      factors.push_back(absl::StrCat(Clean(g.platform()), " ", ClassText(g), " ",
                                     RatioText(true, g.suggested_cpu_per_byte_factor())));
    }
    rows.push_back(
        {absl::StrCat(c.id()), TimeText(c.saved_at()), Clean(c.saved_by()), TimeText(c.since()),
         absl::StrCat(c.input_count(), c.truncated() ? " (truncated)" : ""),
         absl::StrCat(c.groups_size()), factors.empty() ? "-" : absl::StrJoin(factors, "; ")});
  }
  Table(rows, out);
  if (r.calibrations_size() == 0) out << "(no saved calibration)\n";
}

std::string AgeText(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  if (d < absl::Minutes(1)) return absl::StrCat(absl::ToInt64Seconds(d), "s");
  if (d < absl::Hours(1)) return absl::StrCat(absl::ToInt64Minutes(d), "m");
  if (d < absl::Hours(48)) return absl::StrCat(absl::ToInt64Hours(d), "h");
  return absl::StrCat(absl::ToInt64Hours(d) / 24, "d");
}

void RenderProposed(const smbfleet::v1::ProposeChangeResponse& r, std::ostream& out) {
  const Change& c = r.change();
  out << Clean(c.id()) << "\n";
  out << "proposed: " << c.hosts_size() << " host(s), " << c.impact().refused_clients()
      << " client(s) would be refused; needs " << c.approvals_required() << " approval(s)\n";
  for (const auto& s : r.skipped()) out << "skipped: " << Clean(s) << "\n";
  out << "review with: smbfleetctl changes show " << Clean(c.id()) << "\n";
}

void RenderChangeList(const smbfleet::v1::ListChangesResponse& r, absl::Time now,
                      std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "HOSTS", "APPROVALS", "PROPOSER", "AGE", "REASON"}};
  for (const Change& c : r.changes()) {
    uint32_t hosts = c.hosts_size() > 0 ? c.hosts_size() : c.impact().hosts();
    std::string age = c.proposed_at().seconds() == 0
                          ? "-"
                          : AgeText(now - absl::FromUnixSeconds(c.proposed_at().seconds()));
    rows.push_back({Clean(c.id()), ChangeStateText(c.state()), absl::StrCat(hosts),
                    ApprovalCount(c), Clean(c.proposed_by()), age,
                    c.reason().empty() ? "-" : Clean(c.reason())});
  }
  Table(rows, out);
  if (r.changes_size() == 0) out << "(no changes)\n";
}

void RenderChange(const Change& c, std::ostream& out) {
  out << "Change " << Clean(c.id()) << "  " << ChangeStateText(c.state()) << "  version "
      << c.version() << "\n";
  out << "Reason:      " << (c.reason().empty() ? "-" : Clean(c.reason())) << "\n";
  out << "Source:      " << SourceText(c) << "\n";
  out << "Proposed:    " << Clean(c.proposed_by()) << " at " << TimeText(c.proposed_at()) << "\n";
  if (!c.policy_name().empty()) {
    out << "Policy:      " << Clean(c.policy_name()) << " " << Clean(c.policy_version()) << "\n";
  }
  out << "Expires:     " << TimeText(c.not_after()) << "\n";
  out << "Content:     " << Clean(c.content_hash()) << "\n";
  if (!c.rolled_back_by().empty()) {
    out << "Rolled back: by change " << Clean(c.rolled_back_by()) << "\n";
  }

  const auto& impact = c.impact();
  out << "\nImpact:      ";
  if (impact.refused_clients() == 0) {
    out << "no known client would be refused (" << impact.hosts() << " host(s))\n";
  } else {
    out << impact.refused_clients() << " client(s) would be refused, on "
        << impact.hosts_with_impact() << " of " << impact.hosts() << " host(s)\n";
    for (const auto& a : impact.clients()) {
      out << "  " << ClientText(a) << "\n    " << WhyText(a) << "\n";
      if (a.has_first_seen()) out << "    " << SeenText(a) << "\n";
    }
  }

  out << "Approvals:   " << c.approvals_size() << " of " << c.approvals_required() << " required\n";
  for (const auto& a : c.approvals()) {
    out << "  " << Clean(a.approver()) << " at " << TimeText(a.at());
    if (!a.comment().empty()) out << ": " << Clean(a.comment());
    out << "\n";
  }
  if (!c.rejected_by().empty()) out << "Rejected by: " << Clean(c.rejected_by()) << "\n";

  const auto& ro = c.rollout();
  out << "Rollout:     ";
  if (c.wave_count() > 0) {
    out << "wave " << std::min(c.current_wave() + 1, c.wave_count()) << " of " << c.wave_count();
  } else {
    out << "not started";
  }
  std::vector<std::string> canaries;
  for (const auto& h : ro.canary_hosts()) canaries.push_back(Clean(h));
  if (!canaries.empty()) out << "; canary " << absl::StrJoin(canaries, ", ");
  out << "; waves " << (ro.waves().empty() ? "100%" : Clean(ro.waves()));
  if (!ro.watch().empty()) out << "; watch " << Clean(ro.watch());
  out << "\n";
  for (const auto& w : ro.windows()) out << "  window " << Clean(w) << "\n";
  if (!c.halt_reason().empty()) out << "Halted:      " << Clean(c.halt_reason()) << "\n";

  out << "\nHosts (" << c.hosts_size() << ")\n";
  for (const ChangeHost& h : c.hosts()) RenderHostDetail(h, out);
}

void RenderApproved(const smbfleet::v1::ApproveChangeResponse& r, std::ostream& out) {
  const Change& c = r.change();
  out << Clean(c.id()) << ": approval " << r.approvals() << " of " << r.approvals_required()
      << " recorded; " << ChangeStateText(c.state());
  if (r.approvals() < r.approvals_required()) {
    out << " (needs " << r.approvals_required() - r.approvals() << " more)";
  }
  out << "\n";
}

void RenderChangeAction(const std::string& action, const Change& c, const Change* rollback,
                        std::ostream& out) {
  out << Clean(c.id()) << ": " << action << "; now " << ChangeStateText(c.state());
  if (!c.halt_reason().empty() && c.state() == smbfleet::v1::CHANGE_STATE_HALTED) {
    out << " (" << Clean(c.halt_reason()) << ")";
  }
  out << "\n";
  if (rollback != nullptr && !rollback->id().empty()) {
    // A rollback change is signed like any change: proposed first, sent once approved.
    out << "rollback change " << Clean(rollback->id())
        << (rollback->state() == smbfleet::v1::CHANGE_STATE_PROPOSED ? " proposed for "
                                                                     : " sent to ")
        << rollback->hosts_size() << " host(s): smbfleetctl changes watch " << Clean(rollback->id())
        << "\n";
  }
}

void RenderAudit(const smbfleet::v1::ListAuditResponse& r, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"SEQ", "TIME", "ACTOR", "ACTION", "CHANGE/WAIVER", "HOST", "REASON", "DETAIL"}};
  for (const auto& e : r.entries()) {
    std::string object =
        !e.change_id().empty()
            ? Clean(e.change_id())
            : (!e.waiver_id().empty() ? absl::StrCat("waiver ", Clean(e.waiver_id())) : "-");
    rows.push_back({absl::StrCat(e.seq()), TimeText(e.at()), Clean(e.actor()), Clean(e.action()),
                    object, e.host().empty() ? "-" : Clean(e.host()),
                    e.reason().empty() ? "-" : Clean(e.reason()),
                    e.detail().empty() ? "-" : Clean(e.detail())});
  }
  Table(rows, out);
  if (r.entries_size() == 0) out << "(no audit entries)\n";
}

namespace {

std::string WaiverScope(const smbfleet::v1::Waiver& w) {
  if (!w.share().empty()) {
    return w.host().empty() ? absl::StrCat("share ", Clean(w.share()))
                            : absl::StrCat("share ", Clean(w.share()), " on ", Clean(w.host()));
  }
  if (!w.label_key().empty()) {
    return absl::StrCat("label ", Clean(w.label_key()), "=", Clean(w.label_value()));
  }
  if (!w.host().empty()) return absl::StrCat("host ", Clean(w.host()));
  return "-";
}

std::string WaiverStateText(smbfleet::v1::WaiverState s) {
  std::string name = smbfleet::v1::WaiverState_Name(s);
  if (name.empty()) return absl::StrCat("STATE_", static_cast<int>(s));
  return name.substr(std::string("WAIVER_STATE_").size());
}

}  // namespace

void RenderWaivers(const smbfleet::v1::ListWaiversResponse& r, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"ID", "STATE", "RULE", "SCOPE", "EXPIRES",
                                                 "REQUESTED BY", "APPROVED BY", "TICKET",
                                                 "JUSTIFICATION"}};
  for (const auto& w : r.waivers()) {
    rows.push_back({Clean(w.id()), WaiverStateText(w.state()), Clean(w.rule_id()), WaiverScope(w),
                    TimeText(w.expires_at()), w.created_by().empty() ? "-" : Clean(w.created_by()),
                    w.approved_by().empty() ? "-" : Clean(w.approved_by()),
                    w.ticket().empty() ? "-" : Clean(w.ticket()), Clean(w.justification())});
  }
  Table(rows, out);
  if (r.waivers_size() == 0) out << "(no waivers)\n";
}

void RenderWaiver(const std::string& action, const smbfleet::v1::Waiver& w, std::ostream& out) {
  out << Clean(w.id()) << "\n"
      << action << ": rule " << Clean(w.rule_id()) << ", " << WaiverScope(w) << ", "
      << WaiverStateText(w.state()) << ", expires " << TimeText(w.expires_at()) << "\n";
}

std::vector<std::string> WatchPrinter::Update(const Change& c, absl::Time now) {
  std::vector<std::string> lines;
  std::string time = absl::FormatTime("%Y-%m-%d %H:%M:%SZ", now, absl::UTCTimeZone());
  std::string change = ChangeStateText(c.state());
  if (c.wave_count() > 0) {
    absl::StrAppend(&change, "  wave ", std::min(c.current_wave() + 1, c.wave_count()), " of ",
                    c.wave_count());
  }
  if (!c.halt_reason().empty()) absl::StrAppend(&change, "  ", Clean(c.halt_reason()));
  if (first_ || change != change_) {
    lines.push_back(absl::StrCat(time, "  change  ", change));
    change_ = change;
  }
  first_ = false;
  for (const ChangeHost& h : c.hosts()) {
    auto now_state = std::make_pair(h.state(), h.message());
    auto it = hosts_.find(h.host());
    if (it != hosts_.end() && it->second == now_state) continue;
    hosts_[h.host()] = now_state;
    std::string line =
        absl::StrCat(time, "  ", Clean(h.host()), "  ", HostChangeStateText(h.state()));
    if (!h.message().empty()) absl::StrAppend(&line, "  ", Clean(h.message()));
    lines.push_back(std::move(line));
  }
  return lines;
}

WatchOutcome WatchOutcomeOf(const Change& c) {
  std::optional<ExitCode> code = ExitCodeForChange(c);
  if (!code.has_value()) return WatchOutcome::kContinue;
  return *code == kExitOk ? WatchOutcome::kSucceeded : WatchOutcome::kFailed;
}

HostTally TallyHosts(const Change& c) {
  HostTally t;
  for (const ChangeHost& h : c.hosts()) {
    switch (h.state()) {
      case smbfleet::v1::HOST_CHANGE_STATE_APPLIED:
        ++t.applied;
        break;
      case smbfleet::v1::HOST_CHANGE_STATE_FAILED:
      case smbfleet::v1::HOST_CHANGE_STATE_TIMED_OUT:
      case smbfleet::v1::HOST_CHANGE_STATE_ROLLED_BACK:
        ++t.failed;
        break;
      case smbfleet::v1::HOST_CHANGE_STATE_REFUSED:
      case smbfleet::v1::HOST_CHANGE_STATE_PRECONDITION_FAILED:
        ++t.refused;
        break;
      default:  // PENDING, DISPATCHED
        ++t.pending;
        break;
    }
  }
  return t;
}

std::string ProgressLine(const Change& c, size_t width) {
  if (width == 0) width = 80;
  const HostTally t = TallyHosts(c);
  std::string head = absl::StrCat(Clean(c.id()), "  ", ChangeStateText(c.state()));
  if (c.wave_count() > 0) {
    absl::StrAppend(&head, "  wave ", std::min(c.current_wave() + 1, c.wave_count()), "/",
                    c.wave_count());
  }
  const std::string tail = absl::StrCat(t.applied, " applied  ", t.failed, " failed  ", t.refused,
                                        " refused  ", t.pending, " pending");
  // The bar takes what is left, 10 to 40 columns.
  const size_t fixed = DisplayWidth(head) + DisplayWidth(tail) + 6;
  const size_t bar_width = std::clamp<size_t>(width > fixed ? width - fixed : 0, 10, 40);
  std::string bar;
  const int total = t.applied + t.failed + t.refused + t.pending;
  if (total > 0) {
    // Cumulative rounding: the segments always add up to the bar.
    int before = 0;
    size_t drawn = 0;
    for (const auto& [count, mark] : {std::pair<int, char>{t.applied, '#'},
                                      {t.failed, 'x'},
                                      {t.refused, '!'},
                                      {t.pending, '.'}}) {
      before += count;
      const size_t upto = static_cast<size_t>(before) * bar_width / static_cast<size_t>(total);
      bar.append(upto - drawn, mark);
      drawn = upto;
    }
  } else {
    bar.assign(bar_width, ' ');
  }
  return FitCell(absl::StrCat(head, "  [", bar, "]  ", tail), width);
}

}  // namespace smbfleet::cli
