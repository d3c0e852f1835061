// Every Windows probe parser (parsers.cc, registry_parsers.cc, the events probe). The first input
// byte picks the parser (modulo their number), the rest is that probe's output. One parser per
// input rather than all of them: each execution stays as cheap as one probe, and libFuzzer learns
// which prefix reaches which parser, so mutations of a Get-SmbShare capture keep exercising the
// share parser instead of being spent on eleven parsers that reject its shape. Corpus files are
// the capture files with that byte in front (see tests/fuzz/make_corpora.sh).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/platform/windows/events.h"
#include "agent/platform/windows/parsers.h"
#include "smbfleet/v1/posture.pb.h"

namespace windows = smbfleet::agent::windows;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<windows::ProbeSpec>& probes = windows::WindowsProbes();
  const size_t choice = data[0] % (probes.size() + 1);
  absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> problems;
  if (choice == probes.size()) {
    std::map<std::string, uint64_t> latest;
    (void)windows::ParseEvents(bytes, "events.json", &problems, &latest);
    return 0;
  }
  const windows::ProbeSpec& probe = probes[choice];
  smbfleet::v1::Posture posture;
  if (probe.parse(bytes, probe.file, &posture, &problems).ok()) {
    windows::FinishPosture(&posture);
    (void)posture.ByteSizeLong();
  }
  return 0;
}
