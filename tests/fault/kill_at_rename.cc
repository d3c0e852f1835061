// A test tool of the fault suite, never linked into the product: preloaded into a process
// (LD_PRELOAD), it kills that process with SIGKILL on entering rename() whose target is
// $SMBFLEET_FAULT_KILL_AT_RENAME_TO, before the rename happens. samba_apply_kill.sh uses it to
// kill the agent between the renames of two include files, an instant timing cannot hit.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" int rename(const char* from, const char* to) {
  static const char* target = std::getenv("SMBFLEET_FAULT_KILL_AT_RENAME_TO");
  if (target != nullptr && to != nullptr && std::strcmp(to, target) == 0) {
    ::kill(::getpid(), SIGKILL);
  }
  using Rename = int (*)(const char*, const char*);
  static const Rename real = reinterpret_cast<Rename>(::dlsym(RTLD_NEXT, "rename"));
  return real(from, to);
}
