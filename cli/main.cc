// smbfleetctl: the operator's command line over AdminService (mutual TLS, operator certificate).
// Commands, flags, output and exit codes: docs/smbfleetctl.md (`smbfleetctl --help`).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/commands_approvals.h"
#include "cli/ctl_config.h"
#include "cli/exit_code.h"
#include "cli/policy_command.h"
#include "cli/render.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {
namespace {

int Run(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "policy") {
    return RunPolicyCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), std::cout,
                            std::cerr);
  }
  if (!argv.empty() && argv[0] == "keys") {
    return RunKeysCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), std::cout,
                          std::cerr);
  }
  auto parsed = ParseCommandLine(argv, absl::Now());
  if (!parsed.ok()) {
    // Values from files and flags are echoed in the message: shown escaped, line by line.
    for (absl::string_view line : absl::StrSplit(parsed.status().message(), '\n')) {
      std::cerr << "smbfleetctl: " << Clean(line) << "\n";
    }
    std::cerr << "Run 'smbfleetctl --help' (or COMMAND --help) for the commands and flags.\n";
    return kExitUsage;
  }
  Invocation& inv = *parsed;
  if (inv.command == "help") {
    std::cout << inv.help;
    return kExitOk;
  }

  CtlConfig config;
  std::string config_file = inv.global.config;
  if (config_file.empty() && std::getenv("SMBFLEET_CTL_CONFIG") != nullptr) {
    config_file = std::getenv("SMBFLEET_CTL_CONFIG");
  }
  if (!config_file.empty()) {
    auto loaded = LoadCtlConfig(config_file);
    if (!loaded.ok()) {
      std::cerr << "smbfleetctl: " << loaded.status().message() << "\n";
      return kExitUsage;
    }
    config = *loaded;
  }
  if (!inv.global.collector.empty()) config.collector_address = inv.global.collector;
  if (!inv.global.cert.empty()) config.tls.cert = inv.global.cert;
  if (!inv.global.key.empty()) config.tls.key = inv.global.key;
  if (!inv.global.ca.empty()) config.tls.ca = inv.global.ca;
  if (config.tls.cert.empty() || config.tls.key.empty() || config.tls.ca.empty()) {
    std::cerr << "smbfleetctl: an operator certificate is needed: --config FILE or --cert, --key "
                 "and --ca\n";
    return kExitUsage;
  }
  auto tls = LoadTls(config.tls);
  if (!tls.ok()) {
    std::cerr << "smbfleetctl: " << tls.status().message() << "\n";
    return kExitUsage;
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
  return Execute(inv, *stub, std::cout, std::cerr);
}

}  // namespace
}  // namespace smbfleet::cli

int main(int argc, char** argv) {
  return smbfleet::cli::Run(std::vector<std::string>(argv + 1, argv + argc));
}
