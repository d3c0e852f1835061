// A policy file (YAML) as the collector and smbfleetctl read it.

#include <cstddef>
#include <cstdint>
#include <string>

#include "policy/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)smbfleet::policy::ParsePolicy("fuzz.yaml", text);
  return 0;
}
