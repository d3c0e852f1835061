// A test tool of the fault suite, never linked into the product: preloaded into a process
// (LD_PRELOAD), it kills that process with SIGKILL at one rename(), an instant timing cannot
// hit. Which rename (environment of the preloaded process):
//   SMBFLEET_FAULT_KILL_AT_RENAME_TO      the target path, exactly; or
//   SMBFLEET_FAULT_KILL_AT_RENAME_PREFIX  a target starting with this
//   SMBFLEET_FAULT_KILL_AT_RENAME_SUFFIX  and ending with this
//   SMBFLEET_FAULT_KILL_AT_RENAME_NTH     the n-th matching rename (default 1)
//   SMBFLEET_FAULT_KILL_AT_RENAME_AFTER   "1": once that rename returned; else on entering it
// samba_apply_kill.sh uses it to kill the agent between two renames of include files, and
// between its change journal's entries.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool Matches(const char* to) {
  static const char* exact = Env("SMBFLEET_FAULT_KILL_AT_RENAME_TO");
  static const char* prefix = Env("SMBFLEET_FAULT_KILL_AT_RENAME_PREFIX");
  static const char* suffix = Env("SMBFLEET_FAULT_KILL_AT_RENAME_SUFFIX");
  if (to == nullptr) return false;
  if (exact != nullptr) return std::strcmp(to, exact) == 0;
  if (prefix == nullptr && suffix == nullptr) return false;
  const size_t n = std::strlen(to);
  if (prefix != nullptr && std::strncmp(to, prefix, std::strlen(prefix)) != 0) return false;
  return suffix == nullptr ||
         (n >= std::strlen(suffix) && std::strcmp(to + n - std::strlen(suffix), suffix) == 0);
}

}  // namespace

extern "C" int rename(const char* from, const char* to) {
  static const int nth = Env("SMBFLEET_FAULT_KILL_AT_RENAME_NTH") != nullptr
                             ? std::atoi(Env("SMBFLEET_FAULT_KILL_AT_RENAME_NTH"))
                             : 1;
  static const bool after = Env("SMBFLEET_FAULT_KILL_AT_RENAME_AFTER") != nullptr &&
                            std::strcmp(Env("SMBFLEET_FAULT_KILL_AT_RENAME_AFTER"), "1") == 0;
  static std::atomic<int> seen{0};
  using Rename = int (*)(const char*, const char*);
  static const Rename real = reinterpret_cast<Rename>(::dlsym(RTLD_NEXT, "rename"));
  const bool kill_here = Matches(to) && seen.fetch_add(1) + 1 == nth;
  if (kill_here && !after) ::kill(::getpid(), SIGKILL);
  const int r = real(from, to);
  if (kill_here) ::kill(::getpid(), SIGKILL);
  return r;
}
