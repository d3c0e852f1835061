#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_EVENT_LOG_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_EVENT_LOG_H_

// Windows-only: read one event channel through the Windows Event Log API (wevtapi). Returns the
// rendered event XML and the formatted message; agent/platform/windows/event_xml.h turns them into
// the same objects the PowerShell path produces. Plain structs only (builds with mingw-w64).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace smbfleet::agent::windows::shim {

struct EventRecord {
  std::string xml;      // EvtRenderEventXml, UTF-8
  std::string message;  // EvtFormatMessage, UTF-8 (empty when the publisher has no text)
};

struct ChannelRead {
  bool channel_exists = true;
  uint64_t latest_record_id = 0;    // 0 when the channel is empty
  std::vector<EventRecord> events;  // newest first, at most max_events, record id > after
  std::string error;                // non-empty on failure (access denied, ...)
};

ChannelRead ReadChannel(const std::string& channel, uint64_t after_record_id, size_t max_events);

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_EVENT_LOG_H_
