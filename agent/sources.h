#ifndef SMBFLEET_AGENT_SOURCES_H_
#define SMBFLEET_AGENT_SOURCES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/core/command_runner.h"
#include "agent/core/settings_applier.h"
#include "agent/core/source.h"

namespace smbfleet::agent {

// SOURCE as in DESIGN.md: samba, samba:SMB_CONF, windows, windows-capture:DIR.
absl::StatusOr<std::unique_ptr<PostureSource>> MakeSource(const std::string& spec,
                                                          const SourceContext& context);

// The SettingsApplier that changes what SOURCE reads (the same smb.conf, the same host). NotFound
// naming the source when it cannot apply changes (windows-capture:DIR is a recording).
absl::StatusOr<std::unique_ptr<SettingsApplier>> MakeApplier(const std::string& spec,
                                                             const SourceContext& context);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_SOURCES_H_
