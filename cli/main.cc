// smbfleetctl: the operator's command line over AdminService (mutual TLS, operator certificate).
//
//   smbfleetctl [--config FILE] [--collector HOST:PORT] [--cert F --key F --ca F] COMMAND
//   hosts [--prefix P] [--format=json|text]
//   host show NAME [--format=json|text]
//   host refresh NAME              ask the host's agent to report now
//   policy check FILE | policy eval --policy FILE --posture FILE [--format=json]
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/ctl_config.h"
#include "cli/policy_command.h"
#include "cli/render.h"
#include "common/json.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {
namespace {

constexpr char kUsage[] =
    "usage: smbfleetctl [--config FILE] [--collector HOST:PORT] [--cert FILE --key FILE --ca FILE]"
    " COMMAND\n"
    "commands:\n"
    "  hosts [--prefix P] [--format=json|text]   list hosts\n"
    "  host show NAME [--format=json|text]       a host's latest posture\n"
    "  host refresh NAME                         ask the host's agent to report now\n"
    "  compliance [--format=json|text]           fleet compliance per rule of the active policy\n"
    "  findings [--host H] [--rule R] [--format=json|text]   failing results, since when\n"
    "  policy check FILE                         lint a policy file\n"
    "  policy eval --policy FILE --posture FILE [--format=json]   evaluate offline\n"
    "The configuration file (YAML: collector, server_name, tls: {cert, key, ca}) comes from\n"
    "--config or $SMBFLEET_CTL_CONFIG.\n";

struct Args {
  std::string config, collector, cert, key, ca, format = "text", prefix, host, rule;
  std::vector<std::string> positional;
};

int Usage(const std::string& problem) {
  if (!problem.empty()) std::cerr << "smbfleetctl: " << problem << "\n";
  std::cerr << kUsage;
  return 2;
}

bool TakeValue(const std::vector<std::string>& argv, size_t* i, const std::string& name,
               std::string* out) {
  const std::string& a = argv[*i];
  if (a == "--" + name) {
    if (*i + 1 >= argv.size()) return false;
    *out = argv[++*i];
    return true;
  }
  if (absl::StartsWith(a, "--" + name + "=")) {
    *out = a.substr(name.size() + 3);
    return true;
  }
  return false;
}

int Fail(const grpc::Status& s, const std::string& what) {
  std::cerr << "smbfleetctl: " << what << ": " << s.error_message() << " (" << s.error_code()
            << ")\n";
  return s.error_code() == grpc::StatusCode::NOT_FOUND ? 3 : 1;
}

// A response protobuf cannot render as JSON (e.g. a string that is not UTF-8) is reported, not
// dereferenced.
int PrintJson(const google::protobuf::Message& message) {
  auto json = ToJson(message);
  if (!json.ok()) {
    std::cerr << "smbfleetctl: " << json.status().message() << "\n";
    return 1;
  }
  std::cout << *json;
  return 0;
}

int Run(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "policy") {
    return RunPolicyCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), std::cout,
                            std::cerr);
  }
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (TakeValue(argv, &i, "config", &args.config) ||
        TakeValue(argv, &i, "collector", &args.collector) ||
        TakeValue(argv, &i, "cert", &args.cert) || TakeValue(argv, &i, "key", &args.key) ||
        TakeValue(argv, &i, "ca", &args.ca) || TakeValue(argv, &i, "format", &args.format) ||
        TakeValue(argv, &i, "prefix", &args.prefix) || TakeValue(argv, &i, "host", &args.host) ||
        TakeValue(argv, &i, "rule", &args.rule)) {
      continue;
    }
    if (argv[i] == "-h" || argv[i] == "--help") return Usage("");
    if (absl::StartsWith(argv[i], "--")) return Usage(absl::StrCat("unknown option ", argv[i]));
    args.positional.push_back(argv[i]);
  }
  if (args.positional.empty()) return Usage("no command given");
  if (args.format != "json" && args.format != "text") {
    return Usage(absl::StrCat("--format must be json or text, got '", args.format, "'"));
  }
  if (args.positional[0] == "policy") {
    return Usage("put 'policy' first: smbfleetctl policy ...");
  }

  CtlConfig config;
  if (args.config.empty() && std::getenv("SMBFLEET_CTL_CONFIG") != nullptr) {
    args.config = std::getenv("SMBFLEET_CTL_CONFIG");
  }
  if (!args.config.empty()) {
    auto loaded = LoadCtlConfig(args.config);
    if (!loaded.ok()) {
      std::cerr << "smbfleetctl: " << loaded.status().message() << "\n";
      return 2;
    }
    config = *loaded;
  }
  if (!args.collector.empty()) config.collector_address = args.collector;
  if (!args.cert.empty()) config.tls.cert = args.cert;
  if (!args.key.empty()) config.tls.key = args.key;
  if (!args.ca.empty()) config.tls.ca = args.ca;
  if (config.tls.cert.empty() || config.tls.key.empty() || config.tls.ca.empty()) {
    return Usage("an operator certificate is needed: --config FILE or --cert, --key and --ca");
  }
  auto tls = LoadTls(config.tls);
  if (!tls.ok()) {
    std::cerr << "smbfleetctl: " << tls.status().message() << "\n";
    return 2;
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetSslTargetNameOverride(
      config.server_name.empty()
          ? config.collector_address.substr(0, config.collector_address.rfind(':'))
          : config.server_name);
  channel_args.SetMaxReceiveMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(config.collector_address,
                                           MutualTlsChannelCredentials(*tls), channel_args);
  auto stub = smbfleet::v1::AdminService::NewStub(channel);
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(30); };

  const auto& pos = args.positional;
  if (pos[0] == "hosts" && pos.size() == 1) {
    smbfleet::v1::ListHostsResponse all;
    smbfleet::v1::ListHostsRequest req;
    req.set_name_prefix(args.prefix);
    req.set_page_size(1000);
    while (true) {
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline());
      smbfleet::v1::ListHostsResponse page;
      auto s = stub->ListHosts(&ctx, req, &page);
      if (!s.ok()) return Fail(s, "listing hosts");
      for (auto& h : *page.mutable_hosts()) *all.add_hosts() = std::move(h);
      if (page.next_page_token().empty()) break;
      req.set_page_token(page.next_page_token());
    }
    if (args.format == "json") return PrintJson(all);
    RenderHostTable(all, std::cout);
    return 0;
  }
  if (pos[0] == "host" && pos.size() == 3 && pos[1] == "show") {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    smbfleet::v1::GetHostRequest req;
    req.set_name(pos[2]);
    smbfleet::v1::GetHostResponse resp;
    auto s = stub->GetHost(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, absl::StrCat("reading host ", pos[2]));
    if (args.format == "json") return PrintJson(resp);
    RenderHost(resp, std::cout);
    return 0;
  }
  if (pos[0] == "host" && pos.size() == 3 && pos[1] == "refresh") {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    smbfleet::v1::RequestReportRequest req;
    req.set_name(pos[2]);
    smbfleet::v1::RequestReportResponse resp;
    auto s = stub->RequestReport(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, absl::StrCat("asking ", pos[2], " to report"));
    std::cout << pos[2] << ": report requested\n";
    return 0;
  }
  if (pos[0] == "compliance" && pos.size() == 1) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    smbfleet::v1::GetComplianceResponse resp;
    auto s = stub->GetCompliance(&ctx, smbfleet::v1::GetComplianceRequest(), &resp);
    if (!s.ok()) return Fail(s, "reading compliance");
    if (args.format == "json") return PrintJson(resp);
    RenderCompliance(resp, std::cout);
    return 0;
  }
  if (pos[0] == "findings" && pos.size() == 1) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    smbfleet::v1::ListFindingsRequest req;
    req.set_host(args.host);
    req.set_rule_id(args.rule);
    smbfleet::v1::ListFindingsResponse resp;
    auto s = stub->ListFindings(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, "listing findings");
    if (args.format == "json") return PrintJson(resp);
    RenderFindings(resp, std::cout);
    return 0;
  }
  return Usage(absl::StrCat("unknown command '", pos[0], "'"));
}

}  // namespace
}  // namespace smbfleet::cli

int main(int argc, char** argv) {
  return smbfleet::cli::Run(std::vector<std::string>(argv + 1, argv + argc));
}
