#include "cli/commands.h"

#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/admin_call.h"
#include "cli/change_render.h"
#include "cli/commands_approvals.h"
#include "cli/commands_identity.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/json.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;

// An audit or host listing larger than this is cut, with a note, rather than held in memory.
constexpr int kMaxPages = 1000;

// One unary call with the standard deadline.
int ListHosts(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  v1::ListHostsRequest req = RequestOf<v1::ListHostsRequest>(inv);
  req.set_page_size(1000);
  v1::ListHostsResponse all;
  for (int page_no = 0; page_no < kMaxPages; ++page_no) {
    v1::ListHostsResponse page;
    if (auto s = Call(&AdminStub::ListHosts, stub, req, &page); !s.ok()) {
      return FailedCall(s, "listing hosts", err);
    }
    for (auto& h : *page.mutable_hosts()) *all.add_hosts() = std::move(h);
    if (page.next_page_token().empty()) break;
    req.set_page_token(page.next_page_token());
  }
  if (inv.global.format == "json") return PrintJson(all, out, err);
  RenderHostTable(all, out);
  return kExitOk;
}

// The audit log, oldest first, paged by sequence number until the collector has no more (or
// --limit entries were read).
int ListAudit(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  v1::ListAuditRequest req = RequestOf<v1::ListAuditRequest>(inv);
  const uint32_t wanted = req.limit();
  v1::ListAuditResponse all;
  for (int page_no = 0; page_no < kMaxPages; ++page_no) {
    if (wanted > 0) req.set_limit(wanted - all.entries_size());
    v1::ListAuditResponse page;
    if (auto s = Call(&AdminStub::ListAudit, stub, req, &page); !s.ok()) {
      return FailedCall(s, "reading the audit log", err);
    }
    int64_t last = req.after_seq();
    for (auto& e : *page.mutable_entries()) {
      last = std::max(last, e.seq());
      *all.add_entries() = std::move(e);
    }
    // A page that does not move forward is the end (also guards a collector that ignores
    // after_seq).
    if (page.entries_size() == 0 || last <= req.after_seq()) break;
    if (wanted > 0 && static_cast<uint32_t>(all.entries_size()) >= wanted) break;
    req.set_after_seq(last);
  }
  if (wanted > 0 && static_cast<uint32_t>(all.entries_size()) > wanted) {
    all.mutable_entries()->DeleteSubrange(static_cast<int>(wanted),
                                          all.entries_size() - static_cast<int>(wanted));
  }
  if (inv.global.format == "json") return PrintJson(all, out, err);
  RenderAudit(all, out);
  return kExitOk;
}

// Polls GetChange until the change reaches a final state. On a terminal (text): one progress
// line redrawn in place, then the hosts that did not apply; otherwise a line per change of state
// (WatchPrinter), or with --format=json one GetChangeResponse per poll that changed something.
int Watch(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  const auto& req = RequestOf<v1::GetChangeRequest>(inv);
  const absl::Time deadline = absl::Now() + inv.watch.timeout;
  const bool json = inv.global.format == "json";
  const bool bar = !json && StdoutIsTerminal();
  WatchPrinter printer;
  std::string drawn;  // the progress line on screen
  while (true) {
    v1::GetChangeResponse resp;
    grpc::Status s = Call(&AdminStub::GetChange, stub, req, &resp);
    if (!s.ok() && s.error_code() != grpc::StatusCode::UNAVAILABLE &&
        s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      if (!drawn.empty()) out << "\n";
      return FailedCall(s, absl::StrCat("reading change ", req.id()), err);
    }
    if (s.ok()) {
      const v1::Change& change = resp.change();
      if (json) {
        if (!printer.Update(change, absl::Now()).empty()) {
          if (int rc = PrintJson(resp, out, err); rc != kExitOk) return rc;
        }
      } else if (bar) {
        std::string line = ProgressLine(change, TableWidth());
        if (line != drawn) {
          out << "\r" << line << "\x1b[K";
          drawn = std::move(line);
        }
      } else {
        for (const std::string& line : printer.Update(change, absl::Now())) out << line << "\n";
      }
      out.flush();
      if (std::optional<ExitCode> code = ExitCodeForChange(change); code.has_value()) {
        if (bar) {
          out << "\n";
          for (const v1::ChangeHost& h : change.hosts()) {
            if (h.state() == v1::HOST_CHANGE_STATE_APPLIED) continue;
            out << "  " << Clean(h.host()) << "  " << HostChangeStateText(h.state())
                << (h.message().empty() ? "" : "  ") << Clean(h.message()) << "\n";
          }
        }
        if (*code != kExitOk) {
          err << "smbfleetctl: change " << Clean(req.id()) << " ended "
              << ChangeStateText(change.state()) << " without every host applied\n";
        }
        return *code;
      }
    } else {
      if (!drawn.empty()) out << "\n";
      drawn.clear();
      err << "smbfleetctl: collector unreachable, retrying: " << Clean(s.error_message()) << "\n";
    }
    if (absl::Now() + inv.watch.interval > deadline) {
      if (!drawn.empty()) out << "\n";
      err << "smbfleetctl: --timeout: change " << Clean(req.id()) << " has not finished\n";
      return kExitFailed;
    }
    absl::SleepFor(inv.watch.interval);
  }
}

}  // namespace

int Execute(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  const std::string& cmd = inv.command;
  const bool json = inv.global.format == "json";
  if (IsApprovalCommand(cmd)) return ExecuteApprovals(inv, stub, out, err);
  if (IsIdentityCommand(cmd)) return ExecuteIdentity(inv, stub, out, err);
  if (cmd == "hosts") return ListHosts(inv, stub, out, err);
  if (cmd == "host show") {
    const auto& req = RequestOf<v1::GetHostRequest>(inv);
    v1::GetHostResponse resp;
    if (auto s = Call(&AdminStub::GetHost, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("reading host ", req.name()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderHost(resp, out);
    return kExitOk;
  }
  if (cmd == "host refresh") {
    const auto& req = RequestOf<v1::RequestReportRequest>(inv);
    v1::RequestReportResponse resp;
    if (auto s = Call(&AdminStub::RequestReport, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("asking ", req.name(), " to report"), err);
    }
    if (json) return PrintJson(resp, out, err);
    out << Clean(req.name()) << ": report requested\n";
    return kExitOk;
  }
  if (cmd == "compliance") {
    v1::GetComplianceResponse resp;
    if (auto s =
            Call(&AdminStub::GetCompliance, stub, RequestOf<v1::GetComplianceRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "reading compliance", err);
    }
    if (json) return PrintJson(resp, out, err);
    if (inv.global.format == "csv") {
      RenderComplianceCsv(resp, out);
      return kExitOk;
    }
    RenderCompliance(resp, out);
    return kExitOk;
  }
  if (cmd == "findings") {
    v1::ListFindingsResponse resp;
    if (auto s =
            Call(&AdminStub::ListFindings, stub, RequestOf<v1::ListFindingsRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing findings", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderFindings(resp, out);
    return kExitOk;
  }
  if (cmd == "readiness") {
    v1::GetReadinessResponse resp;
    if (auto s =
            Call(&AdminStub::GetReadiness, stub, RequestOf<v1::GetReadinessRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "reading readiness", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderReadiness(resp, out);
    return kExitOk;
  }
  if (cmd == "changes propose") {
    v1::ProposeChangeResponse resp;
    if (auto s =
            Call(&AdminStub::ProposeChange, stub, RequestOf<v1::ProposeChangeRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "proposing a change", err);
    }
    if (json) return PrintJson(resp.change(), out, err);
    RenderProposed(resp, out);
    return kExitOk;
  }
  if (cmd == "changes list") {
    v1::ListChangesResponse resp;
    if (auto s = Call(&AdminStub::ListChanges, stub, RequestOf<v1::ListChangesRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing changes", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderChangeList(resp, absl::Now(), out);
    return kExitOk;
  }
  if (cmd == "changes show") {
    const auto& req = RequestOf<v1::GetChangeRequest>(inv);
    v1::GetChangeResponse resp;
    if (auto s = Call(&AdminStub::GetChange, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("reading change ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderChange(resp.change(), out);
    return kExitOk;
  }
  if (cmd == "changes watch") return Watch(inv, stub, out, err);
  if (cmd == "changes calibration") {
    v1::CostModelCalibrationResponse resp;
    if (auto s = Call(&AdminStub::CostModelCalibration, stub,
                      RequestOf<v1::CostModelCalibrationRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "calibrating the cost model", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderCalibration(resp.calibration(), out);
    return kExitOk;
  }
  if (cmd == "changes calibration save") {
    v1::SaveCostModelCalibrationResponse resp;
    if (auto s = Call(&AdminStub::SaveCostModelCalibration, stub,
                      RequestOf<v1::SaveCostModelCalibrationRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "saving a cost model calibration", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderCalibration(resp.calibration(), out);
    return kExitOk;
  }
  if (cmd == "changes calibration history") {
    v1::ListCostModelCalibrationsResponse resp;
    if (auto s = Call(&AdminStub::ListCostModelCalibrations, stub,
                      RequestOf<v1::ListCostModelCalibrationsRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing cost model calibrations", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderCalibrationHistory(resp, out);
    return kExitOk;
  }
  if (cmd == "changes approve") {
    const auto& req = RequestOf<v1::ApproveChangeRequest>(inv);
    v1::ApproveChangeResponse resp;
    if (auto s = Call(&AdminStub::ApproveChange, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("approving change ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderApproved(resp, out);
    return kExitOk;
  }
  if (cmd == "changes reject") {
    const auto& req = RequestOf<v1::RejectChangeRequest>(inv);
    v1::RejectChangeResponse resp;
    if (auto s = Call(&AdminStub::RejectChange, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("rejecting change ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderChangeAction("rejected", resp.change(), nullptr, out);
    return kExitOk;
  }
  if (cmd == "changes halt" || cmd == "changes resume" || cmd == "changes rollback") {
    const auto& req = RequestOf<v1::ChangeActionRequest>(inv);
    std::string action = cmd.substr(std::string("changes ").size());
    auto method = action == "halt"     ? &AdminStub::HaltChange
                  : action == "resume" ? &AdminStub::ResumeChange
                                       : &AdminStub::RollbackChange;
    v1::ChangeActionResponse resp;
    if (auto s = Call(method, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat(action, " of change ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderChangeAction(action == "halt"     ? "halted"
                       : action == "resume" ? "resumed"
                                            : "rolled back",
                       resp.change(), resp.has_rollback() ? &resp.rollback() : nullptr, out);
    return kExitOk;
  }
  if (cmd == "audit") return ListAudit(inv, stub, out, err);
  if (cmd == "waivers list") {
    v1::ListWaiversResponse resp;
    if (auto s = Call(&AdminStub::ListWaivers, stub, RequestOf<v1::ListWaiversRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing waivers", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderWaivers(resp, out);
    return kExitOk;
  }
  if (cmd == "waivers request") {
    v1::RequestWaiverResponse resp;
    if (auto s =
            Call(&AdminStub::RequestWaiver, stub, RequestOf<v1::RequestWaiverRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "requesting a waiver", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderWaiver("requested", resp.waiver(), out);
    return kExitOk;
  }
  if (cmd == "waivers approve") {
    const auto& req = RequestOf<v1::ApproveWaiverRequest>(inv);
    v1::ApproveWaiverResponse resp;
    if (auto s = Call(&AdminStub::ApproveWaiver, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("approving waiver ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderWaiver("approved", resp.waiver(), out);
    return kExitOk;
  }
  if (cmd == "waivers revoke") {
    const auto& req = RequestOf<v1::RevokeWaiverRequest>(inv);
    v1::RevokeWaiverResponse resp;
    if (auto s = Call(&AdminStub::RevokeWaiver, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("revoking waiver ", req.id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderWaiver("revoked", resp.waiver(), out);
    return kExitOk;
  }
  err << "smbfleetctl: internal error: no handler for '" << cmd << "'\n";
  return kExitFailed;
}

}  // namespace smbfleet::cli
