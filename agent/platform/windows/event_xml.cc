#include "agent/platform/windows/event_xml.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/platform/windows/ps_json.h"

namespace smbfleet::agent::windows {
namespace {

std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == absl::string_view::npos || semi - i > 10) {
      out.push_back('&');
      continue;
    }
    absl::string_view ent = s.substr(i + 1, semi - i - 1);
    uint32_t cp = 0;
    if (ent == "amp") {
      out.push_back('&');
    } else if (ent == "lt") {
      out.push_back('<');
    } else if (ent == "gt") {
      out.push_back('>');
    } else if (ent == "quot") {
      out.push_back('"');
    } else if (ent == "apos") {
      out.push_back('\'');
    } else if (ent.size() > 2 && ent[0] == '#' && (ent[1] == 'x' || ent[1] == 'X') &&
               absl::SimpleHexAtoi(ent.substr(2), &cp)) {
      AppendUtf8(cp, &out);
    } else if (ent.size() > 1 && ent[0] == '#' && absl::SimpleAtoi(ent.substr(1), &cp)) {
      AppendUtf8(cp, &out);
    } else {
      out.append(s.data() + i, semi - i + 1);
    }
    i = semi;
  }
  return out;
}

// The first <tag ...>text</tag> or <tag .../> after `from`; returns the tag's attribute text
// and inner text.
bool FindElement(absl::string_view xml, absl::string_view tag, size_t from, std::string* attrs,
                 std::string* text, size_t* end) {
  std::string open = absl::StrCat("<", tag);
  size_t p = from;
  while (true) {
    p = xml.find(open, p);
    if (p == absl::string_view::npos) return false;
    char next = p + open.size() < xml.size() ? xml[p + open.size()] : '\0';
    if (next == ' ' || next == '>' || next == '/' || next == '\t' || next == '\n' || next == '\r') {
      break;
    }
    p += open.size();
  }
  size_t gt = xml.find('>', p);
  if (gt == absl::string_view::npos) return false;
  bool self_closing = xml[gt - 1] == '/';
  *attrs = std::string(xml.substr(p + open.size(), gt - p - open.size() - (self_closing ? 1 : 0)));
  if (self_closing) {
    text->clear();
    *end = gt + 1;
    return true;
  }
  std::string close = absl::StrCat("</", tag, ">");
  size_t c = xml.find(close, gt);
  if (c == absl::string_view::npos) return false;
  *text = std::string(xml.substr(gt + 1, c - gt - 1));  // raw: callers unescape leaves
  *end = c + close.size();
  return true;
}

std::string Attribute(absl::string_view attrs, absl::string_view name) {
  for (char q : {'\'', '"'}) {
    std::string key = absl::StrCat(name, "=", std::string(1, q));
    size_t p = attrs.find(key);
    while (p != absl::string_view::npos && p > 0 && attrs[p - 1] != ' ' && attrs[p - 1] != '\t' &&
           attrs[p - 1] != '\n') {
      p = attrs.find(key, p + 1);
    }
    if (p == absl::string_view::npos) continue;
    size_t start = p + key.size();
    size_t stop = attrs.find(q, start);
    if (stop == absl::string_view::npos) return "";
    return Unescape(attrs.substr(start, stop - start));
  }
  return "";
}

}  // namespace

absl::StatusOr<nlohmann::json> EventXmlToObject(absl::string_view xml, absl::string_view message) {
  std::string attrs, text;
  size_t end = 0;
  nlohmann::json o = nlohmann::json::object();
  if (!FindElement(xml, "System", 0, &attrs, &text, &end)) {
    return absl::InvalidArgumentError("event XML: no <System> element");
  }
  std::string system = text;
  std::string a, t;
  size_t e = 0;
  if (FindElement(system, "Provider", 0, &a, &t, &e)) o["ProviderName"] = Attribute(a, "Name");
  uint64_t n = 0;
  if (!FindElement(system, "EventID", 0, &a, &t, &e) || !absl::SimpleAtoi(t, &n)) {
    return absl::InvalidArgumentError("event XML: missing or malformed <EventID>");
  }
  o["Id"] = n;
  if (FindElement(system, "Level", 0, &a, &t, &e) && absl::SimpleAtoi(t, &n)) o["Level"] = n;
  if (FindElement(system, "EventRecordID", 0, &a, &t, &e) && absl::SimpleAtoi(t, &n)) {
    o["RecordId"] = n;
  }
  if (FindElement(system, "Channel", 0, &a, &t, &e)) o["LogName"] = Unescape(t);
  if (FindElement(system, "TimeCreated", 0, &a, &t, &e)) {
    auto ts = ParsePsTime(Attribute(a, "SystemTime"));
    if (ts.has_value()) {
      o["TimeCreated"] = absl::StrCat("/Date(", ts->seconds() * 1000 + ts->nanos() / 1000000, ")/");
    }
  }
  o["Message"] = std::string(message);
  nlohmann::json data = nlohmann::json::object();
  std::string block;
  if (FindElement(xml, "EventData", end, &a, &block, &e)) {
    size_t pos = 0;
    while (FindElement(block, "Data", pos, &a, &t, &pos)) {
      std::string name = Attribute(a, "Name");
      if (!name.empty()) data[name] = Unescape(t);
    }
  }
  o["EventData"] = data;
  return o;
}

std::string EventsDocument(const std::vector<std::pair<std::string, shim::ChannelRead>>& reads) {
  nlohmann::json doc = {{"events", nlohmann::json::array()},
                        {"latest", nlohmann::json::object()},
                        {"errors", nlohmann::json::array()}};
  for (const auto& [channel, read] : reads) {
    if (!read.channel_exists) continue;  // e.g. SMBClient/Audit before WS2025
    if (!read.error.empty()) {
      doc["errors"].push_back({{"channel", channel}, {"message", read.error}});
      continue;
    }
    doc["latest"][channel] = read.latest_record_id;
    for (const auto& ev : read.events) {
      auto obj = EventXmlToObject(ev.xml, ev.message);
      if (!obj.ok()) {
        doc["errors"].push_back({{"channel", channel}, {"message", obj.status().message()}});
        continue;
      }
      doc["events"].push_back(*obj);
    }
  }
  // Invalid UTF-8 from a damaged record must not throw: replace it.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace smbfleet::agent::windows
