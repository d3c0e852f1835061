// The parts of common/files.h that are the same on every OS.
#include "common/files.h"

namespace smbfleet {

bool IsAtomicWriteLeftover(absl::string_view file_name) {
  size_t at = file_name.rfind(".tmp.");
  if (at == absl::string_view::npos || at == 0) return false;
  absl::string_view pid = file_name.substr(at + 5);
  if (pid.empty()) return false;
  for (char c : pid) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace smbfleet
