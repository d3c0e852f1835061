// The native event path: rendered event XML (and its formatted message) into the object the
// PowerShell probe prints, wrapped in the events document and parsed by ParseEvents, as the live
// Windows source does. Input: the XML, then optionally a NUL byte and the message.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/platform/windows/event_xml.h"
#include "agent/platform/windows/events.h"

namespace windows = smbfleet::agent::windows;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::string_view xml = input;
  absl::string_view message;
  if (size_t nul = input.find('\0'); nul != absl::string_view::npos) {
    xml = input.substr(0, nul);
    message = input.substr(nul + 1);
  }
  (void)windows::EventXmlToObject(xml, message);

  smbfleet::agent::windows::shim::ChannelRead read;
  read.latest_record_id = 1;
  read.events.push_back({std::string(xml), std::string(message)});
  std::string doc = windows::EventsDocument({{"Microsoft-Windows-SMBServer/Operational", read}});
  std::vector<std::string> problems;
  std::map<std::string, uint64_t> latest;
  auto events = windows::ParseEvents(doc, "events", &problems, &latest);
  if (!events.ok()) __builtin_trap();  // EventsDocument always writes a document ParseEvents reads
  return 0;
}
