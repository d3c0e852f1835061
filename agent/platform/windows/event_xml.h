#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENT_XML_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENT_XML_H_

// The native event path (shim/event_log.h, EvtQuery) returns rendered event XML. These turn it
// into exactly what the PowerShell events probe prints, so both paths share ParseEvents.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/platform/windows/shim/event_log.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {

// <Event><System>...<EventData><Data Name='ClientName'>...</Data>... into
// {Id, LogName, ProviderName, RecordId, TimeCreated, Level, Message, EventData}. Errors name the
// element that is missing or malformed.
absl::StatusOr<nlohmann::json> EventXmlToObject(absl::string_view xml, absl::string_view message);

// One {"events": [...], "latest": {...}, "errors": [...]} document from per-channel reads.
std::string EventsDocument(const std::vector<std::pair<std::string, shim::ChannelRead>>& reads);

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENT_XML_H_
