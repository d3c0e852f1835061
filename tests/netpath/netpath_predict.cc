// What the cost model predicts for a large sequential read without signing or encryption over a
// link of a given rate and round trip: the figure throughput.sh sets beside what a real transfer
// through smbfleet-delay-link carried.
//
//   netpath_predict --link_mbit=MBIT --rtt_ms=MS [--client=windows|smbclient]
//
// --client picks the client whose window the latency term uses (default windows, the anchor's).
// Prints one JSON object: the prediction, the limit that set it (link, latency, cpu) and the
// model parameters behind the link and latency terms.

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "policy/cost/cost_model.h"

namespace {

namespace cost = ::smbfleet::policy::cost;

bool ParseFlag(const std::string& arg, const std::string& flag, double low, double high,
               double* out) {
  const std::string prefix = "--" + flag + "=";
  if (arg.rfind(prefix, 0) != 0) {
    return false;
  }
  std::string text = arg.substr(prefix.size());
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !(value > low) || !(value <= high)) {
    std::fprintf(stderr, "netpath_predict: --%s: '%s' is not a number in (%g, %g]\n", flag.c_str(),
                 text.c_str(), low, high);
    std::exit(2);
  }
  *out = value;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  double link_mbit = 0;
  double rtt_ms = 0;
  cost::ClientKind client = cost::ClientKind::kWindows;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--client=", 0) == 0) {
      absl::StatusOr<cost::ClientKind> parsed = cost::ParseClientKind(arg.substr(9));
      if (!parsed.ok()) {
        std::fprintf(stderr, "netpath_predict: --%s\n",
                     std::string(parsed.status().message()).c_str());
        return 2;
      }
      client = *parsed;
      continue;
    }
    if (!ParseFlag(arg, "link_mbit", 0, 1e6, &link_mbit) &&
        !ParseFlag(arg, "rtt_ms", 0, 10000, &rtt_ms)) {
      std::fprintf(stderr, "netpath_predict: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (link_mbit == 0 || rtt_ms == 0) {
    std::fprintf(stderr,
                 "usage: netpath_predict --link_mbit=MBIT --rtt_ms=MS "
                 "[--client=windows|smbclient]\n");
    return 2;
  }
  cost::HostProfile host;
  host.link_bits_per_second = link_mbit * 1e6;
  host.rtt_seconds = rtt_ms / 1000;
  const cost::ModelParameters& parameters = cost::DefaultParameters();
  cost::Workload workload = cost::Workload::LargeSequential();
  workload.client = client;
  cost::Prediction p = cost::Predict(host, cost::ProtectionLevel::None(), workload, parameters);
  nlohmann::json out = {
      {"linkMbit", link_mbit},
      {"rttMs", rtt_ms},
      {"client", cost::ClientKindName(client)},
      {"predictedBytesPerSecond", p.throughput_bytes_per_second},
      {"limit", cost::LimitName(p.limit)},
      {"windowBytes", parameters.WindowBytes(client)},
      {"linkEfficiency", parameters.link_efficiency},
  };
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
