// Every CIS SMB item of the Wazuh SCA excerpts in policy/cis/ has a rule in the baseline, and
// every CIS item a baseline rule names exists in its benchmark: a new item in a newer excerpt,
// or a typo in a rule's `cis:`, fails here with the item's number.

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "policy/policy.h"
#include "tests/policy/baseline_for_test.h"
#include "yaml-cpp/yaml.h"

namespace smbfleet::policy {
namespace {

// One SCA check: Wazuh's numeric id and the CIS item of the comment above it.
struct Check {
  std::string wazuh_id;
  std::string cis;
  std::string name;
};

bool AllDigits(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), absl::ascii_isdigit);
}

// "# 2.3.8.1 (L1) Ensure ...": the CIS item, or "" for any other line.
std::string CisItemOfComment(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "#")) return "";
  line = absl::StripLeadingAsciiWhitespace(line);
  const size_t space = line.find(' ');
  if (space == absl::string_view::npos) return "";
  const absl::string_view item = line.substr(0, space);
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(line.substr(space));
  if (!absl::StartsWith(rest, "(L") || rest.size() < 4 || !absl::ascii_isdigit(rest[2]) ||
      rest[3] != ')') {
    return "";
  }
  int parts = 0;
  for (absl::string_view part : absl::StrSplit(item, '.')) {
    if (!AllDigits(part)) return "";
    ++parts;
  }
  return parts >= 2 ? std::string(item) : "";
}

// "  - id: 27037": the Wazuh id, or "" for any other line.
std::string WazuhIdOfLine(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "-")) return "";
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "id:")) return "";
  line = absl::StripLeadingAsciiWhitespace(line);
  return AllDigits(line) ? std::string(line) : "";
}

// The SCA files carry the CIS item only in the comment that precedes each check
// ("  # 2.3.8.1 (L1) Ensure ..."), so the items come from the text; the YAML parse then checks
// that every check of `checks:` got one, and that the comment and the check agree on the name.
std::vector<Check> ReadChecks(const std::string& file) {
  std::string text = ReadSourceFile(file);
  EXPECT_FALSE(text.empty()) << file;
  std::map<std::string, std::string> cis_of;  // wazuh id -> CIS item
  std::string pending;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (std::string item = CisItemOfComment(line); !item.empty()) {
      pending = item;
    } else if (std::string id = WazuhIdOfLine(line); !id.empty()) {
      EXPECT_FALSE(pending.empty()) << file << ": check " << id << " has no CIS comment";
      cis_of[id] = pending;
      pending.clear();
    }
  }
  std::vector<Check> out;
  YAML::Node root = YAML::Load(text);
  const YAML::Node checks = root["checks"];
  EXPECT_TRUE(checks.IsSequence()) << file;
  for (const auto& c : checks) {
    Check check{c["id"].as<std::string>(), "", c["name"].as<std::string>()};
    auto it = cis_of.find(check.wazuh_id);
    EXPECT_NE(it, cis_of.end()) << file << ": check " << check.wazuh_id << " has no CIS item";
    if (it != cis_of.end()) check.cis = it->second;
    out.push_back(std::move(check));
  }
  EXPECT_EQ(out.size(), cis_of.size()) << file << ": CIS comments without a check";
  return out;
}

struct Benchmark {
  const char* key;
  const char* file;
  size_t checks;  // as the excerpt's README states
  std::string (*of)(const Rule&);
};

const Benchmark kBenchmarks[] = {
    {"ws2022", "policy/cis/wazuh-sca-cis_win2022-smb-checks.yml", 16,
     [](const Rule& r) { return r.cis.ws2022(); }},
    {"ws2025", "policy/cis/wazuh-sca-cis_win2025-smb-checks.yml", 27,
     [](const Rule& r) { return r.cis.ws2025(); }},
};

// The checks no rule maps, as "2.3.8.2 (Wazuh 27038, "Ensure ...")".
std::vector<std::string> Unmapped(const Policy& policy, const Benchmark& b,
                                  const std::vector<Check>& checks) {
  std::vector<std::string> out;
  for (const Check& c : checks) {
    bool mapped = false;
    for (const Rule& r : policy.rules) mapped = mapped || b.of(r) == c.cis;
    if (!mapped) out.push_back(c.cis + " (Wazuh " + c.wazuh_id + ", \"" + c.name + "\")");
  }
  return out;
}

// The rules naming an item the benchmark does not have, as "rule-id: 1.2.3".
std::vector<std::string> Foreign(const Policy& policy, const Benchmark& b,
                                 const std::vector<Check>& checks) {
  std::set<std::string> items;
  for (const Check& c : checks) items.insert(c.cis);
  std::vector<std::string> out;
  for (const Rule& r : policy.rules) {
    std::string cis = b.of(r);
    if (!cis.empty() && items.count(cis) == 0) out.push_back(r.id + ": " + cis);
  }
  return out;
}

TEST(CisCoverageTest, EveryCisItemHasABaselineRule) {
  Policy policy = LoadBaseline();
  ASSERT_FALSE(policy.rules.empty());
  for (const Benchmark& b : kBenchmarks) {
    std::vector<Check> checks = ReadChecks(b.file);
    EXPECT_EQ(checks.size(), b.checks) << b.file;
    for (const std::string& item : Unmapped(policy, b, checks)) {
      ADD_FAILURE() << b.key << " " << item << " has no rule in the baseline";
    }
  }
}

TEST(CisCoverageTest, EveryRuleCisItemIsInItsBenchmark) {
  Policy policy = LoadBaseline();
  for (const Benchmark& b : kBenchmarks) {
    for (const std::string& rule : Foreign(policy, b, ReadChecks(b.file))) {
      ADD_FAILURE() << "rule " << rule << " is not an SMB item of " << b.key << " (" << b.file
                    << ")";
    }
  }
}

// The checks above catch what they are for: a rule removed leaves its item unmapped, and a
// rule given a number the benchmark lacks is reported.
TEST(CisCoverageTest, DetectsAMissingAndAForeignItem) {
  const Benchmark& b = kBenchmarks[1];
  std::vector<Check> checks = ReadChecks(b.file);
  Policy policy = LoadBaseline();
  Policy changed = policy;
  changed.rules.clear();
  for (const Rule& r : policy.rules) {
    if (r.cis.ws2025() != "18.6.8.4") changed.rules.push_back(r);
  }
  ASSERT_LT(changed.rules.size(), policy.rules.size());
  const std::string before = changed.rules[0].cis.ws2025() + " ";  // mapped by rules[0] alone
  ASSERT_NE(before, " ");
  changed.rules[0].cis.set_ws2025("18.6.8.6");
  std::vector<std::string> unmapped = Unmapped(changed, b, checks);
  ASSERT_EQ(unmapped.size(), 2u) << absl::StrJoin(unmapped, "; ");
  EXPECT_TRUE(unmapped[0].rfind(before, 0) == 0 || unmapped[1].rfind(before, 0) == 0)
      << absl::StrJoin(unmapped, "; ");
  EXPECT_TRUE(unmapped[0].rfind("18.6.8.4 ", 0) == 0 || unmapped[1].rfind("18.6.8.4 ", 0) == 0)
      << absl::StrJoin(unmapped, "; ");
  EXPECT_EQ(Foreign(changed, b, checks),
            std::vector<std::string>{changed.rules[0].id + ": 18.6.8.6"});
}

}  // namespace
}  // namespace smbfleet::policy
