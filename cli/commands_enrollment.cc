#include "cli/commands_enrollment.h"

#include <chrono>

#include "CLI/CLI.hpp"
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

int RunEnrollmentCommand(const std::string& group, const std::vector<std::string>& args,
                         const StubFactory& connect, std::ostream& out, std::ostream& err) {
  CLI::App app("agent enrollment", absl::StrCat("smbfleetctl ", group));
  app.fallthrough();
  GlobalFlags g;
  app.add_option("--config", g.config, "smbfleetctl configuration file (YAML)");
  app.add_option("--collector", g.collector, "collector address HOST:PORT");
  app.add_option("--cert", g.cert, "operator certificate (PEM)");
  app.add_option("--key", g.key, "operator key (PEM)");
  app.add_option("--ca", g.ca, "CA certificate the collector's certificate chains to");
  app.add_option("--format", g.format, "output: text or json")
      ->check(CLI::IsMember({"text", "json"}));

  bool all = false;
  std::string id, reason, comment, expires = "7d", host;
  uint32_t uses = 0;
  bool reenroll = false;
  std::vector<std::string> labels;
  CLI::App* create = nullptr;
  CLI::App* list = nullptr;
  CLI::App* revoke = nullptr;
  if (group == "enroll-tokens") {
    app.require_subcommand(1);
    create =
        app.add_subcommand("create", "a new enrollment token (admin); its secret is shown once");
    create->add_option("--uses", uses, "how many agents may enroll with it")->required();
    create->add_option("--expires", expires, "a duration such as 7d (at most 90d)")
        ->capture_default_str();
    create->add_option("--label", labels, "K=V: a trusted label every host enrolled gets");
    create->add_option("--comment", comment, "what it is for");
    create->add_flag("--allow-reenrollment", reenroll,
                     "hosts that still hold a valid certificate may enroll again");
    list = app.add_subcommand("list", "active enrollment tokens");
    list->add_flag("--all", all, "also revoked, expired and used-up tokens");
    revoke = app.add_subcommand("revoke", "revoke an enrollment token (admin)");
    revoke->add_option("ID", id, "token id")->required();
    revoke->add_option("--reason", reason, "why")->required();
  } else if (group == "certs") {
    app.require_subcommand(1);
    list = app.add_subcommand("list", "certificates the collector issued, valid ones");
    list->add_option("--host", host, "only this host");
    list->add_flag("--all", all, "also expired and revoked ones");
  } else {  // hosts label
    app.add_option("HOST", host, "the host")->required();
    app.add_option("LABELS", labels, "key=value ... (replaces the host's trusted labels)");
    app.add_option("--reason", reason, "why")->required();
  }
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return Usage(absl::StrCat(group, ": ", e.what()), err);
  }
  const bool json = g.format == "json";
  absl::StatusOr<std::unique_ptr<AdminStub>> stub = connect(g);
  if (!stub.ok()) return Usage(std::string(stub.status().message()), err);
  AdminStub& s = **stub;

  if (create != nullptr && create->parsed()) {
    v1::CreateEnrollmentTokenRequest req;
    req.set_max_uses(uses);
    auto lifetime = ParseDuration(expires);
    if (!lifetime.ok()) return Usage(absl::StrCat("--expires: ", lifetime.status().message()), err);
    *req.mutable_expires_at() = TimeUtil::SecondsToTimestamp(
        absl::ToUnixSeconds(absl::Now() + absl::FromChrono(*lifetime)));
    for (const auto& l : labels) {
      std::string why;
      if (!AddLabel(l, req.mutable_labels(), &why)) return Usage("--label: " + why, err);
    }
    req.set_comment(comment);
    req.set_allow_reenrollment(reenroll);
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
  if (group == "enroll-tokens" && list->parsed()) {
    v1::ListEnrollmentTokensRequest req;
    req.set_include_inactive(all);
    v1::ListEnrollmentTokensResponse resp;
    grpc::Status called =
        WithDeadline([&](grpc::ClientContext* c) { return s.ListEnrollmentTokens(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "listing enrollment tokens", err);
    if (json) return PrintJson(resp, out, err);
    if (resp.tokens().empty()) out << "no enrollment tokens\n";
    for (const auto& t : resp.tokens()) RenderToken(t, out);
    return kExitOk;
  }
  if (revoke != nullptr && revoke->parsed()) {
    v1::RevokeEnrollmentTokenRequest req;
    req.set_id(id);
    req.set_reason(reason);
    v1::RevokeEnrollmentTokenResponse resp;
    grpc::Status called = WithDeadline(
        [&](grpc::ClientContext* c) { return s.RevokeEnrollmentToken(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "revoking enrollment token " + id, err);
    if (json) return PrintJson(resp, out, err);
    out << "revoked enrollment token " << Clean(resp.token().id()) << "\n";
    return kExitOk;
  }
  if (group == "certs") {
    v1::ListCertificatesRequest req;
    req.set_host(host);
    req.set_include_inactive(all);
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
  req.set_host(host);
  req.set_reason(reason);
  for (const auto& l : labels) {
    std::string why;
    if (!AddLabel(l, req.mutable_labels(), &why)) return Usage("LABELS: " + why, err);
  }
  v1::SetHostLabelsResponse resp;
  grpc::Status called =
      WithDeadline([&](grpc::ClientContext* c) { return s.SetHostLabels(c, req, &resp); });
  if (!called.ok()) return FailedCall(called, "setting the labels of " + host, err);
  if (json) return PrintJson(resp, out, err);
  out << "trusted labels of " << Clean(resp.host().name()) << ": " << Labels(resp.host().labels())
      << "\n";
  return kExitOk;
}

}  // namespace smbfleet::cli
