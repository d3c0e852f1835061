// The cost of the agent's load sampling on this Linux host (docs/agent-changes.md "Counters around
// a change"): takes --samples samples back to back from the real /proc and sock_diag source and
// prints one JSON object with the CPU time (user + system of this process) and wall time per
// sample, and the processes /proc held. A figure, not a test.
//
//   counter_sample_bench [--samples=N]

#include <dirent.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "agent/platform/platform.h"
#include "nlohmann/json.hpp"

namespace {

double CpuSeconds() {
  struct timespec ts = {};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int Processes() {
  int n = 0;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return 0;
  while (struct dirent* e = readdir(dir)) {
    int pid = 0;
    if (absl::SimpleAtoi(e->d_name, &pid)) ++n;
  }
  closedir(dir);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (absl::StartsWith(arg, "--samples=") && absl::SimpleAtoi(arg.substr(10), &samples) &&
        samples > 0) {
      continue;
    }
    std::fprintf(stderr, "usage: counter_sample_bench [--samples=N]\n");
    return 2;
  }
  auto source = smbfleet::agent::platform::NewCounterSource();
  source->Sample();  // the first one has no rates; it is not timed
  const double cpu0 = CpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  size_t errors = 0;
  for (int i = 0; i < samples; ++i) errors += source->Sample().errors.size();
  const double cpu = CpuSeconds() - cpu0;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  nlohmann::json out = {
      {"benchmark", "counter_sample"},
      {"samples", samples},
      {"processes", Processes()},
      {"cpu_us_per_sample", cpu / samples * 1e6},
      {"wall_us_per_sample", wall / samples * 1e6},
      {"errors", errors},
  };
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
