#include "cli/commands_enrollment.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/admin_call.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/json.h"
#include "common/yaml_config.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

int Usage(const std::string& problem, std::ostream& err) {
  err << "smbfleetctl: " << Clean(problem) << "\n";
  return kExitUsage;
}

std::string Time(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

std::string Labels(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::vector<std::string> parts;
  parts.reserve(sorted.size());
  for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(Clean(k), "=", Clean(v)));
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

// "key=value" into labels; false (with the problem in *why) when it is not one.
bool AddLabel(const std::string& text, google::protobuf::Map<std::string, std::string>* labels,
              std::string* why) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    *why = absl::StrCat("'", text, "' is not key=value");
    return false;
  }
  (*labels)[text.substr(0, eq)] = text.substr(eq + 1);
  return true;
}

void RenderToken(const v1::EnrollmentToken& t, std::ostream& out) {
  const char* state = t.has_revoked_at() ? "revoked" : (t.uses() >= t.max_uses() ? "used" : "");
  out << Clean(t.id()) << "  uses " << t.uses() << "/" << t.max_uses() << "  expires "
      << Time(t.expires_at()) << "  labels " << Labels(t.labels())
      << (t.allow_reenrollment() ? "  re-enrollment" : "") << (*state ? "  " : "") << state
      << "  by " << Clean(t.created_by()) << (t.comment().empty() ? "" : "  # ")
      << Clean(t.comment()) << "\n";
}

}  // namespace

int ExecuteEnrollment(const Invocation& inv, const StubFactory& connect, std::ostream& out,
                      std::ostream& err) {
  const GlobalFlags& g = inv.global;
  const EnrollmentFlags& f = inv.enrollment;
  const std::string& group = inv.command;
  const bool json = g.format == "json";
  absl::StatusOr<std::unique_ptr<AdminStub>> stub = connect(g);
  if (!stub.ok()) return Usage(std::string(stub.status().message()), err);
  AdminStub& s = **stub;

  if (group == "enroll-tokens create") {
    v1::CreateEnrollmentTokenRequest req;
    req.set_max_uses(f.uses);
    auto lifetime = ParseDuration(f.expires);
    if (!lifetime.ok()) return Usage(absl::StrCat("--expires: ", lifetime.status().message()), err);
    *req.mutable_expires_at() = TimeUtil::SecondsToTimestamp(
        absl::ToUnixSeconds(absl::Now() + absl::FromChrono(*lifetime)));
    for (const auto& l : f.labels) {
      std::string why;
      if (!AddLabel(l, req.mutable_labels(), &why)) return Usage("--label: " + why, err);
    }
    req.set_comment(f.comment);
    req.set_allow_reenrollment(f.allow_reenrollment);
    v1::CreateEnrollmentTokenResponse resp;
    grpc::Status called = WithDeadline(
        [&](grpc::ClientContext* c) { return s.CreateEnrollmentToken(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "creating an enrollment token", err);
    if (json) return PrintJson(resp, out, err);
    RenderToken(resp.token(), out);
    out << "token (shown once; put it in the agent's enroll.token_file, mode 0600):\n"
        << resp.secret() << "\n";
    return kExitOk;
  }
  if (group == "enroll-tokens list") {
    v1::ListEnrollmentTokensRequest req;
    req.set_include_inactive(f.all);
    v1::ListEnrollmentTokensResponse resp;
    grpc::Status called =
        WithDeadline([&](grpc::ClientContext* c) { return s.ListEnrollmentTokens(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "listing enrollment tokens", err);
    if (json) return PrintJson(resp, out, err);
    if (resp.tokens().empty()) out << "no enrollment tokens\n";
    for (const auto& t : resp.tokens()) RenderToken(t, out);
    return kExitOk;
  }
  if (group == "enroll-tokens revoke") {
    v1::RevokeEnrollmentTokenRequest req;
    req.set_id(f.id);
    req.set_reason(f.reason);
    v1::RevokeEnrollmentTokenResponse resp;
    grpc::Status called = WithDeadline(
        [&](grpc::ClientContext* c) { return s.RevokeEnrollmentToken(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "revoking enrollment token " + f.id, err);
    if (json) return PrintJson(resp, out, err);
    out << "revoked enrollment token " << Clean(resp.token().id()) << "\n";
    return kExitOk;
  }
  if (group == "certs list") {
    v1::ListCertificatesRequest req;
    req.set_host(f.host);
    req.set_include_inactive(f.all);
    v1::ListCertificatesResponse resp;
    grpc::Status called =
        WithDeadline([&](grpc::ClientContext* c) { return s.ListCertificates(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "listing certificates", err);
    if (json) return PrintJson(resp, out, err);
    if (resp.certificates().empty()) out << "no certificates\n";
    for (const auto& c : resp.certificates()) {
      out << Clean(c.host()) << "  serial " << Clean(c.serial()) << "  " << Time(c.not_before())
          << " .. " << Time(c.not_after()) << "  "
          << (c.enrollment_token_id().empty() ? std::string("renewal")
                                              : "token " + Clean(c.enrollment_token_id()))
          << (c.has_revoked_at() ? "  revoked" : "") << "\n";
    }
    return kExitOk;
  }
  v1::SetHostLabelsRequest req;
  req.set_host(f.host);
  req.set_reason(f.reason);
  for (const auto& l : f.labels) {
    std::string why;
    if (!AddLabel(l, req.mutable_labels(), &why)) return Usage("LABELS: " + why, err);
  }
  v1::SetHostLabelsResponse resp;
  grpc::Status called =
      WithDeadline([&](grpc::ClientContext* c) { return s.SetHostLabels(c, req, &resp); });
  if (!called.ok()) return FailedCall(called, "setting the labels of " + f.host, err);
  if (json) return PrintJson(resp, out, err);
  out << "trusted labels of " << Clean(resp.host().name()) << ": " << Labels(resp.host().labels())
      << "\n";
  return kExitOk;
}

}  // namespace smbfleet::cli
