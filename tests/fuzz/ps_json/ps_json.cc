// ConvertTo-Json output as Windows PowerShell writes it: decoding (UTF-8/UTF-16, BOMs), object
// extraction (CIM envelopes) and every typed read of every property of every object.

#include "agent/platform/windows/ps_json.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/platform/windows/parsers.h"

namespace windows = smbfleet::agent::windows;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)windows::DecodeText(bytes, "fuzz.json");
  // The scalar helpers take short strings from properties; give them the raw input too.
  (void)windows::ParsePsTime(bytes);
  (void)windows::ParseDialect(bytes);
  (void)windows::ParseCipher(bytes);

  auto objects = windows::ParsePsObjects(bytes, "fuzz.json");
  if (!objects.ok()) return 0;
  std::vector<std::string> problems;
  for (const nlohmann::json& object : *objects) {
    windows::PsObject o(object, "fuzz.json", &problems);
    if (!object.is_object()) continue;
    for (const auto& item : object.items()) {
      const std::string& name = item.key();
      (void)o.Has(name);
      (void)o.Bool(name);
      (void)o.Uint64(name);
      (void)o.IdString(name);
      (void)o.String(name);
      (void)o.StringList(name);
      (void)o.Time(name);
      (void)windows::ScalarText(item.value());
    }
    // Case-insensitive lookups of names that are not there.
    (void)o.Find("NoSuchProperty");
    (void)o.String("name");
  }
  return 0;
}
