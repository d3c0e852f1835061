// `testparm -s -v` output into the effective configuration, then into posture (FillConfig), and
// every share's effective value of every parameter it or [global] names.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/platform/samba/testparm_parser.h"
#include "smbfleet/v1/posture.pb.h"

namespace samba = smbfleet::agent::samba;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = samba::TestparmConfig::Parse(text);
  if (!config.ok()) return 0;
  for (const auto& [name, value] : config->global()) {
    (void)config->Global(name);
    (void)samba::ParseSambaBool(value);
  }
  for (const auto& share : config->shares()) {
    (void)config->FindShare(share.name);
    for (const auto& [name, value] : share.params) {
      (void)config->ShareValue(share, name);
      (void)samba::ParseSambaBool(value);
    }
  }
  smbfleet::v1::Posture posture;
  samba::FillConfig(*config, &posture);
  (void)posture.ByteSizeLong();
  return 0;
}
