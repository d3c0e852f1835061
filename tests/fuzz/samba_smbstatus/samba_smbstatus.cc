// `smbstatus --json` output into sessions and open files, with share paths as testparm gives them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/platform/samba/smbstatus_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* kSharePaths = new std::map<std::string, std::string>{
      {"finance", "/srv/samba/finance"}, {"public", "/srv/samba/public"}, {"root", "/"}};
  absl::string_view json(reinterpret_cast<const char*>(data), size);
  auto status = smbfleet::agent::samba::ParseSmbStatusJson(json, *kSharePaths);
  if (status.ok()) {
    for (const auto& session : status->sessions) (void)session.ByteSizeLong();
    for (const auto& file : status->open_files) (void)file.ByteSizeLong();
  }
  return 0;
}
