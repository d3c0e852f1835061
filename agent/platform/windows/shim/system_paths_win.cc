#include <windows.h>

#include <string>

#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/shim/system_paths.h"

namespace smbfleet::agent::windows::shim {

std::string SystemPowerShellPath() {
  wchar_t buf[MAX_PATH + 1] = {0};
  UINT n = GetSystemDirectoryW(buf, MAX_PATH + 1);
  // Never fall back to the bare name: a failure here (which Windows documents only for a too
  // small buffer) still names System32 on the system drive.
  if (n == 0 || n > MAX_PATH) return PowerShellPathIn("C:\\Windows\\System32");
  return PowerShellPathIn(Narrow(std::wstring(buf, n)));
}

}  // namespace smbfleet::agent::windows::shim
