#ifndef SMBFLEET_COMMON_TESTING_TEMP_DIR_H_
#define SMBFLEET_COMMON_TESTING_TEMP_DIR_H_

// A new, empty folder for a test: PREFIX-XXXXXX under the test's temporary folder, chosen as
// GoogleTest's ::testing::TempDir() chooses it (TEST_TMPDIR, else TMPDIR, else /tmp) without
// needing GoogleTest. deploy/test.sh points TMPDIR at a folder of its own and removes it at the
// end, so a test run leaves nothing behind in /tmp.

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace smbfleet::testing {

inline std::string MakeTestDir(const std::string& prefix) {
  std::string base = "/tmp";
  for (const char* name : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      base = value;
      break;
    }
  }
  std::string tmpl = base + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("cannot make a folder like " + tmpl + ": " + std::strerror(errno));
  }
  return tmpl;
}

}  // namespace smbfleet::testing

#endif  // SMBFLEET_COMMON_TESTING_TEMP_DIR_H_
