#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_FIXTURES_FOR_TEST_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_FIXTURES_FOR_TEST_H_

// Captured smbstatus/testparm output (tests/fixtures/samba/, see capture.sh there).

#include <string>

#include "common/files.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::samba {

inline std::string SambaFixture(const std::string& name) {
  std::string path = std::string(SMBFLEET_SOURCE_DIR) + "/tests/fixtures/samba/" + name;
  auto content = ReadFile(path);
  EXPECT_TRUE(content.ok()) << content.status();
  return content.ok() ? *content : std::string();
}

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_FIXTURES_FOR_TEST_H_
