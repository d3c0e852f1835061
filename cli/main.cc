// smbfleetctl: the operator's command line over AdminService (mutual TLS, operator certificate).
// Commands, flags, output and exit codes: docs/smbfleetctl.md (`smbfleetctl --help`).
#include <cstdlib>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/commands_approvals.h"
#include "cli/commands_enrollment.h"
#include "cli/commands_trust.h"
#include "cli/ctl_config.h"
#include "cli/exit_code.h"
#include "cli/policy_command.h"
#include "cli/render.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace smbfleet::cli {
namespace {

// The collector's AdminService, from the config file and the flags that override it.
absl::StatusOr<std::unique_ptr<smbfleet::v1::AdminService::StubInterface>> Connect(
    const GlobalFlags& flags) {
  CtlConfig config;
  std::string config_file = flags.config;
  if (config_file.empty() && std::getenv("SMBFLEET_CTL_CONFIG") != nullptr) {
    config_file = std::getenv("SMBFLEET_CTL_CONFIG");
  }
  if (!config_file.empty()) {
    ASSIGN_OR_RETURN(config, LoadCtlConfig(config_file));
  }
  if (!flags.collector.empty()) config.collector_address = flags.collector;
  if (!flags.cert.empty()) config.tls.cert = flags.cert;
  if (!flags.key.empty()) config.tls.key = flags.key;
  if (!flags.ca.empty()) config.tls.ca = flags.ca;
  // A bearer token: $SMBFLEET_TOKEN, else the config's token_file. It goes in call metadata,
  // never on the command line.
  std::string token;
  if (const char* env = std::getenv("SMBFLEET_TOKEN"); env != nullptr && *env != '\0') {
    token = env;
  } else if (!config.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadFile(config.token_file, 4096));
  }
  token = std::string(absl::StripAsciiWhitespace(token));
  if (config.tls.ca.empty() ||
      (token.empty() && (config.tls.cert.empty() || config.tls.key.empty()))) {
    return absl::InvalidArgumentError(
        "an operator certificate (--config FILE or --cert, --key and --ca) or a bearer token "
        "(token_file: in the config, or SMBFLEET_TOKEN) with --ca is needed");
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetSslTargetNameOverride(
      config.server_name.empty()
          ? config.collector_address.substr(0, config.collector_address.rfind(':'))
          : config.server_name);
  channel_args.SetMaxReceiveMessageSize(256 << 20);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!token.empty()) {
    // The token alone: a call with a certificate and a token is refused.
    grpc::SslCredentialsOptions ssl;
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile(config.tls.ca, 4 << 20));
    credentials = grpc::CompositeChannelCredentials(grpc::SslCredentials(ssl),
                                                    grpc::AccessTokenCredentials(token));
  } else {
    ASSIGN_OR_RETURN(TlsMaterial tls, LoadTls(config.tls));
    credentials = MutualTlsChannelCredentials(tls);
  }
  auto channel = grpc::CreateCustomChannel(config.collector_address, credentials, channel_args);
  return smbfleet::v1::AdminService::NewStub(channel);
}

// Where the command word is: after the global flags (`--collector X`, `--format=json`, ...).
size_t CommandIndex(const std::vector<std::string>& argv) {
  static const std::set<std::string> kWithValue = {"--config", "--collector", "--cert",
                                                   "--key",    "--ca",        "--format"};
  size_t i = 0;
  while (i < argv.size() && argv[i].size() > 2 && argv[i].compare(0, 2, "--") == 0) {
    i += (kWithValue.count(argv[i]) > 0) ? 2 : 1;
  }
  return i;
}

int Run(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "policy") {
    return RunPolicyCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), std::cout,
                            std::cerr);
  }
  if (!argv.empty() && argv[0] == "keys") {
    return RunKeysCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), std::cout,
                          std::cerr);
  }
  if (!argv.empty() && argv[0] == "trust") {
    return RunTrustCommand(std::vector<std::string>(argv.begin() + 1, argv.end()), Connect,
                           std::cout, std::cerr);
  }
  // The enrollment commands, after any global flags (`--collector X enroll-tokens list`).
  const size_t at = CommandIndex(argv);
  // `certs list` is enrollment's; `certs revoke` and `certs revocations` are the parser's below.
  const bool certs_list = at + 1 < argv.size() && argv[at] == "certs" && argv[at + 1] == "list";
  if (at < argv.size() && (argv[at] == "enroll-tokens" || certs_list)) {
    std::vector<std::string> rest = argv;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(at));
    return RunEnrollmentCommand(argv[at], rest, Connect, std::cout, std::cerr);
  }
  if (at + 1 < argv.size() && argv[at] == "hosts" && argv[at + 1] == "label") {
    std::vector<std::string> rest = argv;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(at),
               rest.begin() + static_cast<std::ptrdiff_t>(at) + 2);
    return RunEnrollmentCommand("hosts label", rest, Connect, std::cout, std::cerr);
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

  auto stub = Connect(inv.global);
  if (!stub.ok()) {
    std::cerr << "smbfleetctl: " << stub.status().message() << "\n";
    return kExitUsage;
  }
  return Execute(inv, **stub, std::cout, std::cerr);
}

}  // namespace
}  // namespace smbfleet::cli

int main(int argc, char** argv) {
  return smbfleet::cli::Run(std::vector<std::string>(argv + 1, argv + argc));
}
