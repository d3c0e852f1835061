// The whole command tree through the one parser: `--help` on every command and subcommand
// (found by reading each help's "Subcommands:" list, from the top) exits 0 and names the command
// and its flags; an unknown flag or a missing argument on every command is a usage error (2)
// that names the command.

#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/exit_code.h"
#include "cli/run.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

struct Ran {
  int rc = 0;
  std::string out, err;
};

Ran Ctl(const std::vector<std::string>& args) {
  StubFactory no_collector = [](const GlobalFlags&) {
    return absl::StatusOr<std::unique_ptr<smbfleet::v1::AdminService::StubInterface>>(
        absl::UnavailableError("no collector in this test"));
  };
  std::ostringstream out, err;
  Ran r;
  r.rc = RunCommandLine(args, no_collector, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// The names under "Subcommands:" in a CLI11 help text.
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> names;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (line == "Subcommands:") {
      in = true;
      continue;
    }
    if (!in) continue;
    if (!absl::StartsWith(line, "  ")) break;
    absl::string_view name = absl::StripLeadingAsciiWhitespace(line);
    names.emplace_back(name.substr(0, name.find(' ')));
  }
  return names;
}

// Every command path, depth first, each with its --help text.
void Walk(const std::vector<std::string>& path, std::vector<std::vector<std::string>>* paths,
          std::map<std::string, std::string>* helps) {
  std::vector<std::string> args = path;
  args.push_back("--help");
  Ran r = Ctl(args);
  const std::string name = absl::StrJoin(path, " ");
  EXPECT_EQ(r.rc, kExitOk) << name << ": " << r.err;
  EXPECT_THAT(r.out, HasSubstr(path.empty() ? std::string("Usage: smbfleetctl ")
                                            : "Usage: smbfleetctl " + name + " "))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("--help"));
  paths->push_back(path);
  (*helps)[name] = r.out;
  for (const std::string& sub : Subcommands(r.out)) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub);
    Walk(deeper, paths, helps);
  }
}

TEST(CommandTreeTest, HelpOnEveryCommandExitsZeroAndNamesItAndItsFlags) {
  std::vector<std::vector<std::string>> paths;
  std::map<std::string, std::string> helps;
  Walk({}, &paths, &helps);
  // Every command of docs/smbfleetctl.md, the three former parsers' included.
  for (const char* expected : {"hosts",
                               "hosts label",
                               "host show",
                               "host refresh",
                               "compliance",
                               "findings",
                               "readiness",
                               "changes propose",
                               "changes list",
                               "changes show",
                               "changes approve",
                               "changes reject",
                               "changes halt",
                               "changes resume",
                               "changes rollback",
                               "changes watch",
                               "audit",
                               "waivers list",
                               "waivers request",
                               "waivers approve",
                               "waivers revoke",
                               "approvers add",
                               "approvers list",
                               "approvers revoke",
                               "whoami",
                               "tokens create",
                               "tokens list",
                               "tokens revoke",
                               "certs revoke",
                               "certs revocations",
                               "certs list",
                               "enroll-tokens create",
                               "enroll-tokens list",
                               "enroll-tokens revoke",
                               "trust init-root",
                               "trust sign-approvers",
                               "trust publish",
                               "trust show",
                               "keys init",
                               "keys show",
                               "policy check",
                               "policy eval",
                               "completion bash"}) {
    EXPECT_EQ(helps.count(expected), 1u) << "not in the tree: " << expected;
  }
  // Each lists its own flags.
  const std::map<std::string, std::vector<std::string>> kFlags = {
      {"", {"--config", "--collector", "--cert", "--key", "--ca", "--format", "--call-timeout"}},
      {"changes approve", {"--comment", "--canary", "--waves", "--watch", "--window", "--key"}},
      {"changes watch", {"--interval", "--timeout"}},
      {"enroll-tokens create", {"--uses", "--expires", "--label", "--allow-reenrollment"}},
      {"trust sign-approvers", {"--root-key", "--serial", "--from-collector", "--approvers"}},
      {"keys init", {"--key"}},
      {"policy eval", {"--policy", "--posture", "--waivers", "--now"}},
      {"hosts label", {"--reason"}},
      {"certs list", {"--host", "--all"}},
      {"readiness", {"--rule", "--change", "--limit"}},
  };
  for (const auto& [command, flags] : kFlags) {
    for (const std::string& flag : flags) {
      EXPECT_THAT(helps[command], HasSubstr(flag)) << command;
    }
  }
  std::cout << "{\"commands\": " << paths.size() << "}\n";
}

TEST(CommandTreeTest, PolicyHelpIsPolicyDashDashHelp) {
  Ran r = Ctl({"policy", "help"});
  EXPECT_EQ(r.rc, kExitOk) << r.err;
  EXPECT_EQ(r.out, Ctl({"policy", "--help"}).out);
  EXPECT_THAT(r.out, HasSubstr("Usage: smbfleetctl policy "));
}

TEST(CommandTreeTest, AnUnknownFlagOnEveryCommandIsAUsageErrorNamingIt) {
  std::vector<std::vector<std::string>> paths;
  std::map<std::string, std::string> helps;
  Walk({}, &paths, &helps);
  for (const auto& path : paths) {
    std::vector<std::string> args = path;
    args.push_back("--no-such-flag");
    Ran r = Ctl(args);
    const std::string name = absl::StrJoin(path, " ");
    EXPECT_EQ(r.rc, kExitUsage) << name;
    // CLI11 reports a missing required argument before an unexpected one.
    EXPECT_THAT(r.err, AnyOf(HasSubstr("not expected: --no-such-flag"), HasSubstr("is required")))
        << name;
    EXPECT_THAT(r.err, HasSubstr("smbfleetctl: " + name)) << name;
    EXPECT_TRUE(r.out.empty()) << name << ": " << r.out;
  }
}

TEST(CommandTreeTest, AMissingArgumentIsAUsageErrorNamingIt) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {{"changes", "show"}, "ID"},
           {{"changes", "reject", "c-1"}, "--reason"},
           {{"tokens", "create", "tina"}, "--roles"},
           {{"enroll-tokens", "create"}, "--uses"},
           {{"enroll-tokens", "revoke", "t-1"}, "--reason"},
           {{"hosts", "label"}, "HOST"},
           {{"trust", "sign-approvers", "--serial", "2", "--out", "x"}, "--root-key"},
           {{"policy", "check"}, "FILE"},
           {{"policy", "eval", "--posture", "p.json"}, "--policy"},
           {{"changes"}, "no subcommand given"},
           {{"changes", "frobnicate"}, "frobnicate"},
           {{"--format=xml", "hosts"}, "--format"},
           {{"hosts", "--format=csv"}, "only compliance prints CSV"},
       }) {
    Ran r = Ctl(c.args);
    EXPECT_EQ(r.rc, kExitUsage) << absl::StrJoin(c.args, " ") << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.want)) << absl::StrJoin(c.args, " ");
  }
}

}  // namespace
}  // namespace smbfleet::cli
