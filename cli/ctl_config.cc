#include "cli/ctl_config.h"

#include "common/files.h"
#include "common/status_macros.h"
#include "common/yaml_config.h"

namespace smbfleet::cli {

absl::StatusOr<CtlConfig> LoadCtlConfig(const std::string& file) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(file, 1 << 20));
  ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(file, text));
  ConfigProblems problems(file);
  CtlConfig c;
  CheckKeys(root, {"collector", "server_name", "tls", "token_file"}, "", &problems);
  if (ReadString(root, "token_file", "", &c.token_file, &problems)) {
    c.token_file = ResolvePath(file, c.token_file);
  }
  ReadString(root, "collector", "", &c.collector_address, &problems);
  ReadString(root, "server_name", "", &c.server_name, &problems);
  YAML::Node tls = root["tls"];
  if (tls.IsDefined()) {
    CheckKeys(tls, {"cert", "key", "ca"}, "tls", &problems);
    if (ReadString(tls, "cert", "tls", &c.tls.cert, &problems))
      c.tls.cert = ResolvePath(file, c.tls.cert);
    if (ReadString(tls, "key", "tls", &c.tls.key, &problems))
      c.tls.key = ResolvePath(file, c.tls.key);
    if (ReadString(tls, "ca", "tls", &c.tls.ca, &problems)) c.tls.ca = ResolvePath(file, c.tls.ca);
  }
  if (!problems.empty()) return problems.ToStatus();
  return c;
}

}  // namespace smbfleet::cli
