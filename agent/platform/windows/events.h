#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENTS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENTS_H_

// SMB events from Microsoft-Windows-SMBServer/{Audit,Security,Operational} and
// Microsoft-Windows-SMBClient/{Security,Connectivity,Audit}: parsing, what each means to policy
// (Event.kind), and the per-channel bookmark that makes every event reported once.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::windows {

// The channels the agent reads.
const std::vector<std::string>& SmbEventChannels();

// Parses Get-WinEvent output as the capture script and the live probe write it: objects with Id,
// LogName, ProviderName, RecordId, TimeCreated, Level, Message and EventData (named fields).
// Plain `Get-WinEvent | ConvertTo-Json` (Properties without names) is accepted too: then the
// fields come from the rendered Message. The live probe wraps them as {"events": [...],
// "latest": {channel: newest RecordId}, "errors": [{channel, message}]}: `latest` and `problems`
// receive those.
absl::StatusOr<std::vector<smbfleet::v1::Event>> ParseEvents(
    absl::string_view bytes, absl::string_view what, std::vector<std::string>* problems,
    std::map<std::string, uint64_t>* latest = nullptr);

// What an event means to policy, e.g. "smb1_access", "unencrypted_rejected", "guest_logon".
// Empty when the event means nothing known. `message` decides the two WS2025 audit ids whose
// signing/encryption meaning is not documented per id.
std::string EventKind(absl::string_view channel, uint32_t event_id, absl::string_view message);

// ClientAddress as EventData renders it: a SOCKADDR in hex ("02000D3DC0A8010A...") or as a byte
// list; IPv4 and IPv6 are decoded, anything else is returned unchanged.
std::string DecodeSockaddr(absl::string_view hex);

// Per channel: the highest EventRecordID already reported. Record ids grow by one per event in
// a channel, so `latest - bookmark` is the number of new events even when fewer were fetched.
class EventBookmark {
 public:
  // A missing file is an empty bookmark; a malformed one is an error naming the file.
  static absl::StatusOr<EventBookmark> Load(const std::string& path);
  absl::Status Save(const std::string& path) const;

  uint64_t Last(const std::string& channel) const;
  const std::map<std::string, uint64_t>& channels() const { return last_; }
  // {"Microsoft-Windows-SMBServer/Audit": 1234, ...}
  std::string ToJson() const;

  struct Selection {
    std::vector<smbfleet::v1::Event> events;  // oldest first
    uint64_t dropped = 0;                     // new events not included
  };
  // Keeps events newer than the bookmark (once each), at most `max_events` (the newest), counts
  // the others as dropped, and advances the bookmark past all of them. `latest` is the newest
  // record id per channel when the reader knows it; a latest below the bookmark means the log was
  // cleared, and the channel starts again from zero.
  Selection Take(std::vector<smbfleet::v1::Event> events, size_t max_events,
                 const std::map<std::string, uint64_t>& latest);

 private:
  std::map<std::string, uint64_t> last_;
};

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_EVENTS_H_
