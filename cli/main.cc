// smbfleetctl: the operator's command line over AdminService (mutual TLS, operator certificate).
// Commands, flags, output and exit codes: docs/smbfleetctl.md (`smbfleetctl --help`).
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "cli/admin_call.h"
#include "cli/ctl_config.h"
#include "cli/render.h"
#include "cli/run.h"
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
  SetReconnectBackoff(channel_args);
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
  // Not connected within the wait: the first call reports why (cli/admin_call.h).
  (void)AwaitConnection(*channel, kConnectWait);
  return smbfleet::v1::AdminService::NewStub(channel);
}

}  // namespace
}  // namespace smbfleet::cli

int main(int argc, char** argv) {
  // Tables fit the terminal; piped output is not cut.
  smbfleet::cli::SetTableWidth(smbfleet::cli::TerminalTableWidth());
  smbfleet::cli::SetStdoutIsTerminal(::isatty(STDOUT_FILENO) == 1);
  return smbfleet::cli::RunCommandLine(std::vector<std::string>(argv + 1, argv + argc),
                                       smbfleet::cli::Connect, std::cout, std::cerr);
}
