// The agent's configuration file (YAML), parsed and validated; no file is read.

#include "agent/core/agent_config.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)smbfleet::agent::ParseAgentConfig("agent.yaml", text);
  return 0;
}
