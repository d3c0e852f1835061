// The collector's configuration file (YAML), parsed and validated; no file is read.

#include <cstddef>
#include <cstdint>
#include <string>

#include "collector/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)smbfleet::collector::ParseCollectorConfig("collector.yaml", text);
  return 0;
}
