#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_PS_JSON_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_PS_JSON_H_

// Reading what Windows PowerShell 5.1 writes for `<cmdlet> | ConvertTo-Json`: UTF-8 or UTF-16
// with or without BOM, a bare object for one result, nothing at all for none, CIM envelope
// noise, enums as numbers, numeric strings, /Date(ms)/ times and uint64 values beyond 2^53.
// Portable: used by the capture folder reader on any machine and by the live Windows source.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/timestamp.pb.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {

// Bytes to UTF-8. Recognises UTF-8 (BOM optional), UTF-16LE/BE with BOM and UTF-16LE without
// BOM (what `>` redirection writes in Windows PowerShell 5.1). `what` names the input in errors.
absl::StatusOr<std::string> DecodeText(absl::string_view bytes, absl::string_view what);

// Parses one ConvertTo-Json output into its objects: an array gives its elements, a bare object
// gives one, empty (or whitespace-only) input gives none. CIM envelope properties are removed;
// properties only present inside CimInstanceProperties ([{Name, Value}] form) are lifted up.
// Errors name `what` and the line and column.
absl::StatusOr<std::vector<nlohmann::json>> ParsePsObjects(absl::string_view bytes,
                                                           absl::string_view what);

// Typed reads of one object's properties. Property names match exactly first, then ignoring
// case (PowerShell names are case-insensitive). A missing or null property is nullopt; a
// property of the wrong shape is nullopt plus one problem line naming `where` and the property.
class PsObject {
 public:
  PsObject(const nlohmann::json& object, std::string where, std::vector<std::string>* problems);

  const nlohmann::json* Find(absl::string_view name) const;
  bool Has(absl::string_view name) const { return Find(name) != nullptr; }

  // true/false, 0/1, "True"/"False".
  std::optional<bool> Bool(absl::string_view name) const;
  // Non-negative integers, exactly (no double round trip), or decimal strings.
  std::optional<uint64_t> Uint64(absl::string_view name) const;
  // The integer as decimal text (ids beyond 2^53 stay exact).
  std::optional<std::string> IdString(absl::string_view name) const;
  // Strings as they are; numbers and booleans rendered; arrays joined with ", ".
  std::optional<std::string> String(absl::string_view name) const;
  // A string, or an array of strings; a string is split at commas (EncryptionCiphers,
  // NullSessionShares) and every item trimmed; empty items dropped.
  std::optional<std::vector<std::string>> StringList(absl::string_view name) const;
  // "/Date(1700000000000)/" (optionally with a +hhmm offset) or an ISO 8601 string.
  std::optional<google::protobuf::Timestamp> Time(absl::string_view name) const;

  const nlohmann::json& json() const { return object_; }
  const std::string& where() const { return where_; }
  void Problem(absl::string_view name, absl::string_view what) const;

 private:
  const nlohmann::json& object_;
  std::string where_;
  std::vector<std::string>* problems_;
};

// Scalars rendered the way PowerShell shows them ("True", "15", "AES_128_GCM"). For raw maps.
std::string ScalarText(const nlohmann::json& value);

// "/Date(ms)/", "/Date(ms+0100)/", ISO 8601 ("2024-05-01T10:00:00.123Z", "...+02:00"). nullopt
// for anything else and for times a Timestamp cannot hold (before year 1, after year 9999).
std::optional<google::protobuf::Timestamp> ParsePsTime(absl::string_view text);

// Appends one Unicode code point as UTF-8; code points past U+10FFFF are dropped.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_PS_JSON_H_
