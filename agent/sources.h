#ifndef SMBFLEET_AGENT_SOURCES_H_
#define SMBFLEET_AGENT_SOURCES_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/source.h"

namespace smbfleet::agent {

struct SourceContext {
  CommandRunner* runner = nullptr;              // not owned
  std::map<std::string, std::string> tool_env;  // for smbstatus/testparm (e.g. nss_wrapper)
  std::string state_dir;                        // for bookmarks
};

// SOURCE as in DESIGN.md: samba, samba:SMB_CONF, windows, windows-capture:DIR.
absl::StatusOr<std::unique_ptr<PostureSource>> MakeSource(const std::string& spec,
                                                          const SourceContext& context);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_SOURCES_H_
