#include "agent/platform/windows/events.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/platform/windows/ps_json.h"
#include "common/files.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;

v1::EventLevel LevelOf(const PsObject& o) {
  if (auto n = o.Uint64("Level")) {
    switch (*n) {
      case 1:
        return v1::EVENT_LEVEL_CRITICAL;
      case 2:
        return v1::EVENT_LEVEL_ERROR;
      case 3:
        return v1::EVENT_LEVEL_WARNING;
      case 0:  // LogAlways
      case 4:
        return v1::EVENT_LEVEL_INFORMATION;
      case 5:
        return v1::EVENT_LEVEL_VERBOSE;
      default:
        break;
    }
  }
  std::string name = absl::AsciiStrToLower(o.String("LevelDisplayName").value_or(""));
  if (name == "critical") return v1::EVENT_LEVEL_CRITICAL;
  if (name == "error") return v1::EVENT_LEVEL_ERROR;
  if (name == "warning") return v1::EVENT_LEVEL_WARNING;
  if (name == "information") return v1::EVENT_LEVEL_INFORMATION;
  if (name == "verbose") return v1::EVENT_LEVEL_VERBOSE;
  return v1::EVENT_LEVEL_UNSPECIFIED;
}

// "Client Address: 10.0.0.5" lines of a rendered message, by lower-cased label.
std::map<std::string, std::string> MessageFields(absl::string_view message) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(message, absl::ByAnyChar("\r\n"))) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos || colon == 0 || colon > 40) continue;
    std::string label = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon)));
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (!value.empty() && out.count(label) == 0) out[label] = value;
  }
  return out;
}

std::string DataText(const nlohmann::json& v) {
  if (v.is_array()) {
    // Binary EventData through Get-WinEvent Properties: a list of byte values.
    std::string hex;
    for (const auto& b : v) {
      if (!b.is_number_unsigned() && !b.is_number_integer()) return ScalarText(v);
      absl::StrAppendFormat(&hex, "%02X", b.get<int>() & 0xFF);
    }
    return hex;
  }
  if (v.is_object()) return v.dump();
  return ScalarText(v);
}

std::string First(const google::protobuf::Map<std::string, std::string>& data,
                  std::initializer_list<absl::string_view> names) {
  for (absl::string_view n : names) {
    for (const auto& [k, v] : data) {
      if (absl::EqualsIgnoreCase(k, n) && !v.empty()) return v;
    }
  }
  return "";
}

std::string StatusText(absl::string_view s) {
  uint64_t n = 0;
  if (!absl::StartsWith(s, "0x") && !absl::StartsWith(s, "0X") && absl::SimpleAtoi(s, &n)) {
    return absl::StrFormat("0x%08X", n);  // NTSTATUS as Windows prints it
  }
  return std::string(s);
}

}  // namespace

const std::vector<std::string>& SmbEventChannels() {
  static const std::vector<std::string>* kChannels = new std::vector<std::string>{
      "Microsoft-Windows-SMBServer/Audit",        "Microsoft-Windows-SMBServer/Security",
      "Microsoft-Windows-SMBServer/Operational",  "Microsoft-Windows-SMBClient/Security",
      "Microsoft-Windows-SMBClient/Connectivity", "Microsoft-Windows-SMBClient/Audit"};
  return *kChannels;
}

std::string DecodeSockaddr(absl::string_view hex) {
  std::string text(absl::StripAsciiWhitespace(hex));
  absl::string_view h = text;
  if (absl::StartsWith(h, "0x") || absl::StartsWith(h, "0X")) h.remove_prefix(2);
  if (h.size() < 16 || h.size() % 2 != 0) return text;
  for (char c : h) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return text;
  }
  std::string bytes = absl::HexStringToBytes(h);
  auto b = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  int family = b(0) | (b(1) << 8);
  if (family == 2 && bytes.size() >= 8) {  // AF_INET: family, port, 4 address bytes
    return absl::StrCat(b(4), ".", b(5), ".", b(6), ".", b(7));
  }
  if (family == 23 && bytes.size() >= 24) {  // AF_INET6: family, port, flowinfo, 16 bytes
    std::vector<std::string> groups;
    for (size_t i = 8; i < 24; i += 2)
      groups.push_back(absl::StrFormat("%x", (b(i) << 8) | b(i + 1)));
    // Compress the longest run of zero groups, as Windows prints addresses.
    int best_start = -1, best_len = 0;
    for (int i = 0; i < 8;) {
      if (groups[i] != "0") {
        ++i;
        continue;
      }
      int j = i;
      while (j < 8 && groups[j] == "0") ++j;
      if (j - i > best_len && j - i > 1) {
        best_start = i;
        best_len = j - i;
      }
      i = j;
    }
    if (best_start < 0) return absl::StrJoin(groups, ":");
    std::vector<std::string> head(groups.begin(), groups.begin() + best_start);
    std::vector<std::string> tail(groups.begin() + best_start + best_len, groups.end());
    return absl::StrCat(absl::StrJoin(head, ":"), "::", absl::StrJoin(tail, ":"));
  }
  return text;
}

std::string EventKind(absl::string_view channel, uint32_t id, absl::string_view message) {
  std::string c = absl::AsciiStrToLower(channel);
  bool server = absl::StrContains(c, "smbserver");
  bool client = absl::StrContains(c, "smbclient");
  std::string m = absl::AsciiStrToLower(message);
  if (server) {
    switch (id) {
      case 3000:
        return "smb1_access";
      case 1001:
        return "smb1_rejected";
      case 3021:
      case 3022:
        // Which id is signing and which is encryption is not documented per id.
        if (absl::StrContains(m, "encrypt")) return "client_no_encryption";
        if (absl::StrContains(m, "sign")) return "client_no_signing";
        return "client_capability_audit";
      case 3023:
        return "guest_logon";
      case 1003:
        return "unencrypted_rejected";
      case 1004:
        return "bad_signature_rejected";
      case 1005:
        return "negotiate_rejected";
      case 551:
        return "auth_failure";
      case 1006:
        return "share_access_denied";
      case 1007:
      case 1009:
        return "anonymous_denied";
      case 1015:
        return "decrypt_failed";
      case 1024:
        return "smb2_disabled";
      case 1025:
        return "null_session_configured";
      default:
        return "";
    }
  }
  if (client) {
    switch (id) {
      case 31017:
        return "guest_logon_rejected";
      case 31022:
        return "guest_logon";
      // 31018 is an administrator enabling insecure guest logons, not a rejection.
      case 31018:
        return "insecure_guest_enabled";
      case 31998:
      case 31999:
        if (absl::StrContains(m, "encrypt")) return "server_no_encryption";
        if (absl::StrContains(m, "sign")) return "server_no_signing";
        return "server_capability_audit";
      case 32000:
        return "smb1_server_response";
      case 31012:
        return "negotiate_validation_failed";
      case 31013:
        return "signing_validation_failed";
      case 31014:
        return "unencrypted_received";
      case 31020:
        return "weak_session_key";
      default:
        return "";
    }
  }
  return "";
}

absl::StatusOr<std::vector<v1::Event>> ParseEvents(absl::string_view bytes, absl::string_view what,
                                                   std::vector<std::string>* problems,
                                                   std::map<std::string, uint64_t>* latest) {
  auto objects = ParsePsObjects(bytes, what);
  if (!objects.ok()) return objects.status();
  if (objects->size() == 1 && (*objects)[0].contains("events") && !(*objects)[0].contains("Id")) {
    nlohmann::json wrapper = std::move((*objects)[0]);
    objects->clear();
    const nlohmann::json& list = wrapper["events"];
    if (list.is_object()) objects->push_back(list);  // one event, unrolled by PowerShell
    if (list.is_array()) {
      for (const auto& e : list) {
        if (e.is_object()) objects->push_back(e);
      }
    }
    if (wrapper.contains("latest") && wrapper["latest"].is_object()) {
      PsObject l(wrapper["latest"], absl::StrCat(what, ".latest"), problems);
      for (auto it = wrapper["latest"].begin(); it != wrapper["latest"].end(); ++it) {
        auto n = l.Uint64(it.key());
        if (n.has_value() && latest != nullptr) (*latest)[it.key()] = *n;
      }
    }
    if (wrapper.contains("errors") && wrapper["errors"].is_array() && problems != nullptr) {
      for (const auto& err : wrapper["errors"]) {
        problems->push_back(absl::StrCat(what, ": ",
                                         ScalarText(err.value("channel", nlohmann::json())), ": ",
                                         ScalarText(err.value("message", nlohmann::json()))));
      }
    }
  }
  std::vector<v1::Event> events;
  for (size_t i = 0; i < objects->size(); ++i) {
    PsObject o((*objects)[i], absl::StrCat(what, "[", i, "]"), problems);
    auto id = o.Uint64("Id");
    if (!id.has_value()) {
      o.Problem("Id", "missing; event skipped");
      continue;
    }
    v1::Event e;
    e.set_event_id(static_cast<uint32_t>(*id));
    e.set_channel(o.String("LogName").value_or(o.String("ContainerLog").value_or("")));
    e.set_provider(o.String("ProviderName").value_or(""));
    if (auto r = o.Uint64("RecordId")) e.set_record_id(*r);
    if (auto t = o.Time("TimeCreated")) *e.mutable_time() = *t;
    e.set_level(LevelOf(o));
    e.set_message(o.String("Message").value_or(""));
    auto& data = *e.mutable_data();
    if (const nlohmann::json* ed = o.Find("EventData"); ed != nullptr && ed->is_object()) {
      for (auto it = ed->begin(); it != ed->end(); ++it) data[it.key()] = DataText(*it);
    }
    auto fields = MessageFields(e.message());
    auto from_message = [&fields](absl::string_view label) {
      auto it = fields.find(std::string(label));
      return it == fields.end() ? std::string() : it->second;
    };
    std::string address = First(data, {"ClientAddress", "ServerAddress"});
    if (!address.empty()) address = DecodeSockaddr(address);
    // Event 3000 (SMB1 access) carries the address in its only field, ClientName.
    if (address.empty() && e.event_id() == 3000) address = First(data, {"ClientName"});
    if (address.empty()) address = from_message("client address");
    e.set_client_address(address);
    std::string client_name = e.event_id() == 3000 ? "" : First(data, {"ClientName"});
    if (client_name.empty()) client_name = from_message("client name");
    if (client_name.empty()) client_name = First(data, {"ServerName"});
    if (client_name.empty()) client_name = from_message("server name");
    e.set_client_name(client_name);
    std::string user = First(data, {"UserName", "User"});
    if (user.empty()) user = from_message("user name");
    e.set_user(user);
    std::string share = First(data, {"ShareName"});
    if (share.empty()) share = from_message("share name");
    e.set_share_name(share);
    std::string status = First(data, {"Status", "TranslatedStatus"});
    if (status.empty()) {
      status = from_message("status");
      if (status.empty()) status = from_message("error");
      status = std::string(absl::StripAsciiWhitespace(status.substr(0, status.find(' '))));
    }
    e.set_status(StatusText(status));
    e.set_kind(
        EventKind(e.channel().empty() ? e.provider() : e.channel(), e.event_id(), e.message()));
    events.push_back(std::move(e));
  }
  return events;
}

absl::StatusOr<EventBookmark> EventBookmark::Load(const std::string& path) {
  EventBookmark b;
  if (!FileExists(path)) return b;
  auto text = ReadFile(path, 1 << 20);
  if (!text.ok()) return text.status();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(path, ": malformed event bookmark: ", e.what()));
  }
  if (!doc.is_object()) {
    return absl::DataLossError(absl::StrCat(path, ": event bookmark is not an object"));
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!it->is_number_unsigned()) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", it.key(), ": expected a record id, got ", it->dump()));
    }
    b.last_[it.key()] = it->get<uint64_t>();
  }
  return b;
}

std::string EventBookmark::ToJson() const {
  nlohmann::json doc = nlohmann::json::object();
  for (const auto& [channel, id] : last_) doc[channel] = id;
  return doc.dump();
}

absl::Status EventBookmark::Save(const std::string& path) const {
  return WriteFileAtomic(path, ToJson() + "\n", 0600);
}

uint64_t EventBookmark::Last(const std::string& channel) const {
  auto it = last_.find(channel);
  return it == last_.end() ? 0 : it->second;
}

EventBookmark::Selection EventBookmark::Take(std::vector<v1::Event> events, size_t max_events,
                                             const std::map<std::string, uint64_t>& latest) {
  for (const auto& [channel, newest] : latest) {
    if (newest < Last(channel)) last_[channel] = 0;  // the log was cleared or recreated
  }
  std::set<std::pair<std::string, uint64_t>> seen;
  std::vector<v1::Event> fresh;
  std::map<std::string, uint64_t> fetched;
  for (auto& e : events) {
    if (e.record_id() != 0 && e.record_id() <= Last(e.channel())) continue;
    if (e.record_id() != 0 && !seen.insert({e.channel(), e.record_id()}).second) continue;
    ++fetched[e.channel()];
    fresh.push_back(std::move(e));
  }
  Selection out;
  // New events the reader did not return (it fetched at most a bounded number per channel).
  for (const auto& [channel, newest] : latest) {
    uint64_t pending = newest > Last(channel) ? newest - Last(channel) : 0;
    uint64_t got = fetched.count(channel) ? fetched[channel] : 0;
    if (pending > got) out.dropped += pending - got;
  }
  std::stable_sort(fresh.begin(), fresh.end(), [](const v1::Event& a, const v1::Event& b) {
    if (a.time().seconds() != b.time().seconds()) return a.time().seconds() < b.time().seconds();
    if (a.time().nanos() != b.time().nanos()) return a.time().nanos() < b.time().nanos();
    return a.record_id() < b.record_id();
  });
  for (const auto& e : fresh) {
    if (e.record_id() > Last(e.channel())) last_[e.channel()] = e.record_id();
  }
  for (const auto& [channel, newest] : latest) {
    if (newest > Last(channel)) last_[channel] = newest;
  }
  if (fresh.size() > max_events) {
    out.dropped += fresh.size() - max_events;
    fresh.erase(fresh.begin(), fresh.end() - static_cast<std::ptrdiff_t>(max_events));
  }
  out.events = std::move(fresh);
  return out;
}

}  // namespace smbfleet::agent::windows
