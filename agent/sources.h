#ifndef SMBFLEET_AGENT_SOURCES_H_
#define SMBFLEET_AGENT_SOURCES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/source.h"

namespace smbfleet::agent {

// SOURCE as in DESIGN.md: samba, samba:SMB_CONF, windows, windows-capture:DIR.
absl::StatusOr<std::unique_ptr<PostureSource>> MakeSource(const std::string& spec,
                                                          const SourceContext& context);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_SOURCES_H_
