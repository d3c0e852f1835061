#include "agent/platform/windows/ps_json.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"

namespace smbfleet::agent::windows {
namespace {

absl::StatusOr<std::string> Utf16ToUtf8(absl::string_view bytes, bool little_endian,
                                        absl::string_view what) {
  if (bytes.size() % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": UTF-16 text has an odd number of bytes (", bytes.size(), ")"));
  }
  std::string out;
  out.reserve(bytes.size() / 2);
  auto unit = [&](size_t i) -> uint32_t {
    auto b0 = static_cast<unsigned char>(bytes[i]);
    auto b1 = static_cast<unsigned char>(bytes[i + 1]);
    return little_endian ? (b0 | (b1 << 8)) : ((b0 << 8) | b1);
  };
  for (size_t i = 0; i < bytes.size(); i += 2) {
    uint32_t u = unit(i);
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (i + 3 >= bytes.size() || unit(i + 2) < 0xDC00 || unit(i + 2) > 0xDFFF) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": unpaired UTF-16 surrogate at byte ", i));
      }
      uint32_t lo = unit(i + 2);
      AppendUtf8(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00), &out);
      i += 2;
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": unpaired UTF-16 surrogate at byte ", i));
    } else {
      AppendUtf8(u, &out);
    }
  }
  return out;
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ...".
std::string CleanParseError(const std::string& message) {
  absl::string_view m = message;
  size_t close = m.find("] ");
  if (absl::StartsWith(m, "[json.exception") && close != absl::string_view::npos) {
    m.remove_prefix(close + 2);
  }
  return std::string(m);
}

bool IsCimNoise(const std::string& key) {
  return key == "CimClass" || key == "CimInstanceProperties" || key == "CimSystemProperties" ||
         key == "PSComputerName" || key == "PSShowComputerName" || key == "PSSourceJobInstanceId";
}

nlohmann::json StripCim(const nlohmann::json& in) {
  nlohmann::json out = nlohmann::json::object();
  for (auto it = in.begin(); it != in.end(); ++it) {
    if (!IsCimNoise(it.key())) out[it.key()] = it.value();
  }
  // Some serialisers (not ConvertTo-Json) carry the values only inside CimInstanceProperties.
  auto props = in.find("CimInstanceProperties");
  if (props != in.end() && props->is_array()) {
    for (const auto& p : *props) {
      if (!p.is_object()) continue;
      auto name = p.find("Name");
      auto value = p.find("Value");
      if (name == p.end() || !name->is_string() || value == p.end()) continue;
      std::string key = name->get<std::string>();
      if (!out.contains(key)) out[key] = *value;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> DecodeText(absl::string_view bytes, absl::string_view what) {
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xEF &&
      static_cast<unsigned char>(bytes[1]) == 0xBB &&
      static_cast<unsigned char>(bytes[2]) == 0xBF) {
    return std::string(bytes.substr(3));
  }
  if (bytes.size() >= 2) {
    auto b0 = static_cast<unsigned char>(bytes[0]);
    auto b1 = static_cast<unsigned char>(bytes[1]);
    if (b0 == 0xFF && b1 == 0xFE) return Utf16ToUtf8(bytes.substr(2), true, what);
    if (b0 == 0xFE && b1 == 0xFF) return Utf16ToUtf8(bytes.substr(2), false, what);
    // No BOM: JSON starts with ASCII, so UTF-16 shows as a NUL in every other byte.
    if (b0 != 0 && b1 == 0) return Utf16ToUtf8(bytes, true, what);
    if (b0 == 0 && b1 != 0) return Utf16ToUtf8(bytes, false, what);
  }
  return std::string(bytes);
}

absl::StatusOr<std::vector<nlohmann::json>> ParsePsObjects(absl::string_view bytes,
                                                           absl::string_view what) {
  auto text = DecodeText(bytes, what);
  if (!text.ok()) return text.status();
  std::vector<nlohmann::json> objects;
  if (absl::StripAsciiWhitespace(*text).empty()) return objects;  // the cmdlet returned nothing
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": malformed JSON: ", CleanParseError(e.what())));
  }
  if (doc.is_null()) return objects;
  if (doc.is_object()) {
    objects.push_back(StripCim(doc));
    return objects;
  }
  if (!doc.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected an object or an array of objects, got ", doc.type_name()));
  }
  for (size_t i = 0; i < doc.size(); ++i) {
    if (doc[i].is_null()) continue;
    if (!doc[i].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": [", i, "]: expected an object, got ", doc[i].type_name()));
    }
    objects.push_back(StripCim(doc[i]));
  }
  return objects;
}

PsObject::PsObject(const nlohmann::json& object, std::string where,
                   std::vector<std::string>* problems)
    : object_(object), where_(std::move(where)), problems_(problems) {}

const nlohmann::json* PsObject::Find(absl::string_view name) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(std::string(name));
  if (it != object_.end()) return it->is_null() ? nullptr : &*it;
  for (auto i = object_.begin(); i != object_.end(); ++i) {
    if (absl::EqualsIgnoreCase(i.key(), name)) return i->is_null() ? nullptr : &*i;
  }
  return nullptr;
}

void PsObject::Problem(absl::string_view name, absl::string_view what) const {
  if (problems_ != nullptr) problems_->push_back(absl::StrCat(where_, ".", name, ": ", what));
}

std::optional<bool> PsObject::Bool(absl::string_view name) const {
  const nlohmann::json* v = Find(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer() || v->is_number_unsigned()) {
    auto n = v->get<int64_t>();
    if (n == 0 || n == 1) return n == 1;
  }
  if (v->is_string()) {
    std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(v->get<std::string>()));
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
  }
  Problem(name, absl::StrCat("expected a boolean, got ", v->dump()));
  return std::nullopt;
}

std::optional<uint64_t> PsObject::Uint64(absl::string_view name) const {
  const nlohmann::json* v = Find(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    auto n = v->get<int64_t>();
    if (n >= 0) return static_cast<uint64_t>(n);
  }
  if (v->is_number_float()) {
    double d = v->get<double>();
    // Beyond 2^53 a double has already lost digits: refuse rather than report a wrong id.
    if (d >= 0 && d <= 9007199254740992.0 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  if (v->is_string()) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(v->get<std::string>()), &n)) return n;
  }
  Problem(name, absl::StrCat("expected an unsigned integer, got ", v->dump()));
  return std::nullopt;
}

std::optional<std::string> PsObject::IdString(absl::string_view name) const {
  auto n = Uint64(name);
  if (!n.has_value()) return std::nullopt;
  return absl::StrCat(*n);
}

std::string ScalarText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "";
  if (value.is_array()) {
    std::vector<std::string> parts;
    for (const auto& v : value) parts.push_back(ScalarText(v));
    return absl::StrJoin(parts, ", ");
  }
  return value.dump();
}

std::optional<std::string> PsObject::String(absl::string_view name) const {
  const nlohmann::json* v = Find(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_object()) {
    Problem(name, "expected a string, got an object");
    return std::nullopt;
  }
  return ScalarText(*v);
}

std::optional<std::vector<std::string>> PsObject::StringList(absl::string_view name) const {
  const nlohmann::json* v = Find(name);
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  auto add_split = [&out](const std::string& s) {
    for (absl::string_view part : absl::StrSplit(s, ',')) {
      part = absl::StripAsciiWhitespace(part);
      if (!part.empty()) out.emplace_back(part);
    }
  };
  if (v->is_string()) {
    add_split(v->get<std::string>());
    return out;
  }
  if (v->is_array()) {
    for (const auto& item : *v) {
      if (!item.is_string()) {
        Problem(name, absl::StrCat("expected strings, got ", item.dump()));
        return std::nullopt;
      }
      add_split(item.get<std::string>());
    }
    return out;
  }
  Problem(name, absl::StrCat("expected a string or a list of strings, got ", v->dump()));
  return std::nullopt;
}

namespace {

// What a google.protobuf.Timestamp may hold: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
constexpr int64_t kMinTimestampSeconds = -62135596800;
constexpr int64_t kMaxTimestampSeconds = 253402300799;

}  // namespace

std::optional<google::protobuf::Timestamp> ParsePsTime(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  google::protobuf::Timestamp ts;
  absl::string_view body = text;
  if (absl::ConsumePrefix(&body, "/Date(") || absl::ConsumePrefix(&body, "\\/Date(")) {
    if (!absl::ConsumeSuffix(&body, ")/") && !absl::ConsumeSuffix(&body, ")\\/")) {
      return std::nullopt;
    }
    // The optional +hhmm/-hhmm is the writer's zone for display; the milliseconds are UTC.
    size_t sign = body.find_first_of("+-", 1);
    absl::string_view ms_text = body.substr(0, sign);
    int64_t ms = 0;
    if (!absl::SimpleAtoi(ms_text, &ms)) return std::nullopt;
    int64_t secs = ms / 1000;
    int64_t rem = ms % 1000;
    if (rem < 0) {
      rem += 1000;
      secs -= 1;
    }
    if (secs < kMinTimestampSeconds || secs > kMaxTimestampSeconds) return std::nullopt;
    ts.set_seconds(secs);
    ts.set_nanos(static_cast<int32_t>(rem * 1000000));
    return ts;
  }
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return std::nullopt;
  // absl also reads "infinite-past"/"infinite-future"; neither is a time a host reports.
  if (t < absl::FromUnixSeconds(kMinTimestampSeconds) ||
      t >= absl::FromUnixSeconds(kMaxTimestampSeconds + 1)) {
    return std::nullopt;
  }
  absl::Duration since = t - absl::UnixEpoch();
  int64_t secs = absl::ToInt64Seconds(since);
  since -= absl::Seconds(secs);
  int64_t nanos = absl::ToInt64Nanoseconds(since);
  if (nanos < 0) {
    nanos += 1000000000;
    secs -= 1;
  }
  ts.set_seconds(secs);
  ts.set_nanos(static_cast<int32_t>(nanos));
  return ts;
}

std::optional<google::protobuf::Timestamp> PsObject::Time(absl::string_view name) const {
  const nlohmann::json* v = Find(name);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    auto ts = ParsePsTime(v->get<std::string>());
    if (ts.has_value()) return ts;
  }
  // ConvertTo-Json of a DateTime inside a PSCustomObject at depth can be {value, DateTime}.
  if (v->is_object() && v->contains("value") && (*v)["value"].is_string()) {
    auto ts = ParsePsTime((*v)["value"].get<std::string>());
    if (ts.has_value()) return ts;
  }
  Problem(name, absl::StrCat("expected a time such as /Date(1700000000000)/, got ", v->dump()));
  return std::nullopt;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x110000) {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace smbfleet::agent::windows
