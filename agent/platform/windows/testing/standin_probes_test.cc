// The stand-in powershell.exe (Windows only, run under Wine by tests/windows/wine/run.sh) tells
// the agent's scripts apart by text in them. A script edit in scripts.cc that moves that text
// fails here, on Linux, rather than as a puzzling probe error under Wine.

#include <string>
#include <vector>

#include "agent/platform/windows/applier.h"
#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/testing/powershell_standin_probes.h"
#include "agent/platform/windows/windows_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows::testing {
namespace {

// The scripts are ASCII: a byte-wise widening is exact.
std::wstring Wide(const std::string& s) { return std::wstring(s.begin(), s.end()); }

// The probes whose markers the whole script (prelude included, as the stand-in sees it) holds.
std::vector<std::wstring> Matches(const std::string& script) {
  std::wstring text = Wide(ScriptPrelude() + script);
  std::vector<std::wstring> names;
  for (const StandInProbe& p : kStandInProbes) {
    if (text.find(p.marker) != std::wstring::npos) names.emplace_back(p.name);
  }
  return names;
}

TEST(StandInProbes, EachProbeScriptIsRecognisedAsItself) {
  std::vector<std::string> probes;
  for (const ProbeSpec& spec : WindowsProbes()) probes.emplace_back(spec.probe);
  probes.emplace_back("events");
  for (const std::string& probe : probes) {
    ASSERT_FALSE(ProbeScript(probe).empty()) << probe;
    EXPECT_THAT(Matches(ProbeScript(probe)), ::testing::ElementsAre(Wide(probe))) << probe;
  }
  // No entry the agent never runs (a renamed probe would leave one behind).
  EXPECT_EQ(std::size(kStandInProbes), probes.size());
}

TEST(StandInProbes, ApplyScriptIsUnknown) {
  EXPECT_THAT(Matches(ApplyScript()), ::testing::IsEmpty());
}

}  // namespace
}  // namespace smbfleet::agent::windows::testing
