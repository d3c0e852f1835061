// The agent's live PowerShell (agent/platform/windows/scripts.cc) and the capture script
// (deploy/windows/Capture-SmbPosture.ps1) must write the same files with the same shapes: the
// capture source parses both with one set of parsers. These checks fail when one changes alone.

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/platform/windows/events.h"
#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/windows_source.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string CaptureScript() {
  auto text = ReadFile(absl::StrCat(SMBFLEET_SOURCE_DIR, "/deploy/windows/Capture-SmbPosture.ps1"));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

// The text between `start` and the first `end` after it.
std::string Between(const std::string& text, const std::string& start, const std::string& end) {
  size_t from = text.find(start);
  if (from == std::string::npos) return "";
  from += start.size();
  size_t to = text.find(end, from);
  return to == std::string::npos ? "" : text.substr(from, to - from);
}

// The keys of a PowerShell hashtable literal body ("Name = value" separated by lines or ';').
std::vector<std::string> Keys(const std::string& body) {
  std::vector<std::string> keys;
  static const std::regex kKey(R"((?:^|[\n;{])\s*([A-Za-z]+) = )");
  for (std::sregex_iterator it(body.begin(), body.end(), kKey), end; it != end; ++it) {
    keys.push_back((*it)[1]);
  }
  return keys;
}

// Quoted words of a PowerShell list, in order.
std::vector<std::string> Quoted(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex kWord(R"('([^']*)')");
  for (std::sregex_iterator it(text.begin(), text.end(), kWord), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST(CaptureScriptSyncTest, EveryProbeIsCapturedToItsFileWithTheSameShape) {
  const std::string ps1 = CaptureScript();
  for (const ProbeSpec& probe : WindowsProbes()) {
    std::string name(probe.probe);
    EXPECT_EQ(std::string(probe.file), name + ".json") << name;
    if (name == "host") {
      EXPECT_THAT(ps1, HasSubstr("Write-CaptureFile 'host.json'"));
      continue;
    }
    if (!RegistryKeyOf(name).empty()) continue;  // RegistryProbesReadTheSameKeys
    // Save-Cmdlet writes <cmdlet>.json; -Single and -Exclude must match the live script.
    std::smatch m;
    std::regex line("\\nSave-Cmdlet '" + name + "'([^\\n]*)\\n");
    ASSERT_TRUE(std::regex_search(ps1, m, line)) << name << " is not captured";
    const std::string args = m[1];
    const std::string& live = ProbeScript(name);
    bool live_single = live.find("-InputObject @(") == std::string::npos;
    EXPECT_EQ(args.find("-Single") != std::string::npos, live_single) << name;
    std::vector<std::string> excluded = Quoted(Between(args + "\n", "-Exclude @(", ")"));
    for (const std::string& property : excluded) {
      EXPECT_THAT(live, HasSubstr("," + property)) << name << " excludes " << property;
    }
    // The live script excludes the same properties beyond the common Cim*,PSComputerName.
    std::string live_extra = Between(live, "-ExcludeProperty Cim*,PSComputerName", ")");
    if (live_extra.empty())
      live_extra = Between(live, "-ExcludeProperty Cim*,PSComputerName", " |");
    std::vector<std::string> live_excluded = absl::StrSplit(live_extra, ',', absl::SkipEmpty());
    EXPECT_THAT(live_excluded, ElementsAreArray(excluded)) << name;
  }
}

TEST(CaptureScriptSyncTest, RegistryProbesReadTheSameKeysWithoutTheSameProperties) {
  const std::string ps1 = CaptureScript();
  int registry_probes = 0;
  for (const ProbeSpec& probe : WindowsProbes()) {
    std::string name(probe.probe);
    std::string key(RegistryKeyOf(name));
    if (key.empty()) continue;
    ++registry_probes;
    EXPECT_THAT(ps1, HasSubstr(absl::StrCat("\nSave-Registry '", name, "' '", key, "'\n")))
        << name << " is not captured from " << key;
    const std::string& live = ProbeScript(name);
    EXPECT_THAT(live, HasSubstr(absl::StrCat("$key = '", key, "'\n"))) << name;
    std::vector<std::string> live_excluded =
        absl::StrSplit(Between(live, "-ExcludeProperty ", ")"), ',', absl::SkipEmpty());
    EXPECT_THAT(Quoted(Between(ps1, "$RegistryExclude = @(", ")")), ElementsAreArray(live_excluded))
        << name;
  }
  EXPECT_EQ(registry_probes, 3);
}

TEST(CaptureScriptSyncTest, HostInfoHasTheSameFields) {
  std::vector<std::string> live = Keys(Between(ProbeScript("host"), "[ordered]@{", "}"));
  std::vector<std::string> capture =
      Keys(Between(CaptureScript(), "$hostInfo = [ordered]@{", "\n  }"));
  ASSERT_FALSE(live.empty());
  EXPECT_THAT(capture, ElementsAreArray(live));
}

TEST(CaptureScriptSyncTest, EventsComeFromTheSameChannelsWithTheSameFields) {
  const std::string ps1 = CaptureScript();
  EXPECT_THAT(Quoted(Between(ps1, "$channels = @(", ")")), ElementsAreArray(SmbEventChannels()));
  std::vector<std::string> live =
      Keys(Between(ProbeScript("events"), "$out.events += [ordered]@{", "\n    }"));
  std::vector<std::string> capture = Keys(Between(ps1, "$events.Add([ordered]@{", "\n      })"));
  ASSERT_FALSE(live.empty());
  EXPECT_THAT(capture, ElementsAreArray(live));
}

}  // namespace
}  // namespace smbfleet::agent::windows
