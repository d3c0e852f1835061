#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "policy/policy.h"

namespace smbfleet::policy {
namespace {

std::string Baseline() {
  std::ifstream in(std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr char kHeader[] = R"(apiVersion: smbfleet/policy/v1
name: t
version: "1"
)";

TEST(PolicyParserTest, BaselineParsesAndCoversTheIssue) {
  std::string text = Baseline();
  ASSERT_FALSE(text.empty());
  auto p = ParsePolicy("baseline.yaml", text);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "baseline");
  EXPECT_FALSE(p->version.empty());
  std::set<std::string> ids;
  for (const Rule& r : p->rules) ids.insert(r.id);
  for (const char* id : {"smb1-server-disabled",
                         "smb1-client-disabled",
                         "server-signing-required",
                         "client-signing-required",
                         "client-insecure-guest-logons-disabled",
                         "classified-shares-encrypted",
                         "classified-shares-reject-unencrypted",
                         "min-dialect-3-1-1",
                         "no-sessions-below-3-0",
                         "audit-client-no-encryption",
                         "audit-client-no-signing",
                         "spn-name-hardening",
                         "no-null-session-shares",
                         "wan-compression",
                         "client-signing-enabled",
                         "client-plaintext-password-disabled",
                         "server-idle-session-timeout",
                         "server-signing-enabled",
                         "server-forced-logoff",
                         "null-session-pipes-member-server",
                         "null-session-pipes-domain-controller",
                         "restrict-anonymous-access",
                         "hardened-unc-paths",
                         "hardened-unc-paths-privacy",
                         "auth-rate-limiter-enabled",
                         "auth-rate-limiter-delay",
                         "client-audit-insecure-guest-logon",
                         "client-audit-server-no-encryption",
                         "client-audit-server-no-signing",
                         "client-min-dialect-3-1-1",
                         "client-encryption-required",
                         "session-latency"}) {
    EXPECT_TRUE(ids.count(id)) << id;
  }
  for (const Rule& r : p->rules) {
    if (r.id == "server-signing-required") {
      EXPECT_EQ(r.cis.ws2022(), "2.3.9.2");
      ASSERT_EQ(r.remediation.size(), 2u);
      EXPECT_EQ(r.remediation[0].phase, smbfleet::v1::PLAN_PHASE_AUDIT);
    }
    if (r.id == "session-latency") {
      EXPECT_EQ(r.severity, smbfleet::v1::SEVERITY_INFO);
      EXPECT_EQ(r.sessions.min_rtt_us_at_most, 10000u);
    }
    if (r.id == "classified-shares-encrypted") {
      EXPECT_TRUE(r.share_scoped);
      EXPECT_EQ(r.share_classes.size(), 3u);
    }
  }
  EXPECT_EQ(p->classification.classes[p->classification.default_class], "general");
}

struct BadCase {
  const char* name;
  const char* body;    // appended after the header
  const char* expect;  // substring of the error
};

TEST(PolicyParserTest, ReportsProblemsWithLineAndExpectation) {
  const BadCase cases[] = {
      {"unknown top key", "colour: red\nrules: []\n", "t.yaml:4: colour: unknown key"},
      {"no rules", "", "rules: required"},
      {"unknown rule key",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: true}\n"
       "    sevrity: high\n",
       "t.yaml:8: rules[0].sevrity: unknown key (expected one of: id, title"},
      {"wrong type", "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: 3}\n",
       "t.yaml:7: rules[0].expect.server.requireSigning: server.requireSigning is a boolean"},
      {"unknown field",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigninq: true}\n",
       "rules[0].expect.server.requireSigninq: unknown field"},
      {"bad dialect",
       "rules:\n  - id: a\n    title: A\n    expect: {server.minDialect: {atLeast: 3.1.1}}\n",
       "is a dialect: expected one of SMB1"},
      {"atLeast on a bool",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: {atLeast: 1}}\n",
       "atLeast needs a number or dialect field"},
      {"bad pattern",
       "classification:\n  classes: [general, pii]\n  default: general\n  rules:\n"
       "    - {name: x, classification: pii, shareNames: [\"hr[\"]}\n"
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: true}\n",
       "t.yaml:8: classification.rules[0].shareNames[0]: bad pattern: pattern 'hr['"},
      {"unknown class",
       "rules:\n  - id: a\n    title: A\n    shares: {classifications: [secret]}\n"
       "    expect: {share.encrypted: true}\n",
       "unknown classification 'secret'"},
      {"share field without selector",
       "rules:\n  - id: a\n    title: A\n    expect: {share.encrypted: true}\n",
       "a share field needs a `shares:` selector"},
      {"unknown setting",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: true}\n"
       "    remediation: [{setting: server.signEverything, value: true, phase: require}]\n",
       "setting 'server.signEverything' is not on the allowlist"},
      {"bad setting value",
       "rules:\n  - id: a\n    title: A\n    expect: {server.minDialect: {atLeast: SMB_3_0}}\n"
       "    remediation: [{setting: server.minDialect, value: SMB_9, phase: require}]\n",
       "server.minDialect: expected one of SMB_2_0_2"},
      {"bad phase",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: true}\n"
       "    remediation: [{setting: server.requireSigning, value: true, phase: later}]\n",
       "unknown phase 'later'"},
      {"duplicate id",
       "rules:\n  - {id: a, title: A, expect: {server.requireSigning: true}}\n"
       "  - {id: a, title: B, expect: {server.smb1Enabled: false}}\n",
       "duplicate rule id 'a'"},
      {"round-trip bound not a number",
       "rules:\n  - {id: a, title: A, sessions: {minRttUs: {atMost: 10ms}}}\n",
       "rules[0].sessions.minRttUs.atMost: expected a whole number, got"},
      {"round-trip bound without atMost",
       "rules:\n  - {id: a, title: A, sessions: {minRttUs: {atLeast: 10}}}\n",
       "rules[0].sessions.minRttUs.atLeast: unknown key (expected one of: atMost)"},
      {"round-trip bound a scalar", "rules:\n  - {id: a, title: A, sessions: {minRttUs: 10}}\n",
       "rules[0].sessions.minRttUs: expected a mapping"},
      {"bad platform",
       "rules:\n  - {id: a, title: A, appliesTo: {platforms: [macos]}, "
       "expect: {server.requireSigning: true}}\n",
       "unknown platform 'macos'"},
      {"waiver without expiry",
       "rules:\n  - {id: a, title: A, expect: {server.requireSigning: true}}\n"
       "waivers:\n  - {id: w1, rule: a, host: fs01, justification: legacy, approvedBy: bob}\n",
       "waivers[0].expires: required"},
      {"waiver for unknown rule",
       "rules:\n  - {id: a, title: A, expect: {server.requireSigning: true}}\n"
       "waivers:\n  - {id: w1, rule: b, host: fs01, justification: legacy, approvedBy: bob,"
       " expires: \"2027-01-01T00:00:00Z\"}\n",
       "unknown rule 'b'"},
      {"rule without checks", "rules:\n  - {id: a, title: A}\n", "needs `expect:`"},
      {"subsetOf on a bool",
       "rules:\n  - id: a\n    title: A\n    expect: {server.requireSigning: {subsetOf: [x]}}\n",
       "t.yaml:7: rules[0].expect.server.requireSigning.subsetOf: subsetOf needs a list field; "
       "server.requireSigning is not a list"},
      {"subsetOf not a list",
       "rules:\n  - id: a\n    title: A\n    expect: {server.nullSessionPipes: {subsetOf: "
       "LSARPC}}\n",
       "rules[0].expect.server.nullSessionPipes.subsetOf: expected a list of names, got 'LSARPC'"},
      {"duplicate name",
       "rules:\n  - id: a\n    title: A\n"
       "    expect: {server.nullSessionPipes: {subsetOf: [SAMR, samr]}}\n",
       "server.nullSessionPipes.subsetOf[1]: duplicate name 'samr'"},
      {"includes nothing",
       "rules:\n  - id: a\n    title: A\n    expect: {client.hardenedUncSysvol: {includes: []}}\n",
       "client.hardenedUncSysvol.includes: expected at least one name"},
      {"unknown requirement",
       "rules:\n  - id: a\n    title: A\n"
       "    expect: {client.hardenedUncSysvol: {includes: [integrity, signing]}}\n",
       "client.hardenedUncSysvol.includes[1]: unknown name 'signing' for client.hardenedUncSysvol "
       "(expected one of: mutualAuthentication, integrity, privacy)"},
      {"list compared to a value",
       "rules:\n  - id: a\n    title: A\n    expect: {server.nullSessionPipes: [SAMR]}\n",
       "server.nullSessionPipes is a list: expected {empty: true}, {empty: false}, "
       "{subsetOf: [names]} or {includes: [names]}"},
      {"bad exceptHostLabels",
       "rules:\n  - {id: a, title: A, appliesTo: {exceptHostLabels: [dc]}, "
       "expect: {server.requireSigning: true}}\n",
       "appliesTo.exceptHostLabels: expected a mapping of label names to value patterns"},
      {"compressibility not a number",
       "rules:\n  - {id: a, title: A, shares: {compressibility: {atLeast: lots}}, "
       "expect: {share.compressed: true}}\n",
       "shares.compressibility.atLeast: expected a compression ratio such as 1.5, got 'lots'"},
      {"compressibility below 1",
       "rules:\n  - {id: a, title: A, shares: {compressibility: {below: 0.5}}, "
       "expect: {share.compressed: false}}\n",
       "compression ratio 0.5 is outside 1..1000"},
      {"compressibility empty range",
       "rules:\n  - {id: a, title: A, shares: {compressibility: {atLeast: 2, below: 1.5}}, "
       "expect: {share.compressed: true}}\n",
       "atLeast 2 is not below 1.5: no share can match"},
      {"compressibility without bound",
       "rules:\n  - {id: a, title: A, shares: {compressibility: {}}, "
       "expect: {share.compressed: true}}\n",
       "shares.compressibility: expected atLeast and/or below"},
      {"compressibility unknown key",
       "rules:\n  - {id: a, title: A, shares: {compressibility: {above: 2}}, "
       "expect: {share.compressed: true}}\n",
       "shares.compressibility.above: unknown key"},
      {"bad except label pattern",
       "rules:\n  - {id: a, title: A, appliesTo: {exceptHostLabels: {cpu: \"[\"}}, "
       "expect: {server.requireSigning: true}}\n",
       "appliesTo.exceptHostLabels.cpu: bad pattern"},
  };
  for (const BadCase& c : cases) {
    auto p = ParsePolicy("t.yaml", std::string(kHeader) + c.body);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_NE(p.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << p.status().message();
  }
}

TEST(PolicyParserTest, ListsEveryProblemAtOnce) {
  auto p = ParsePolicy("t.yaml", std::string(kHeader) +
                                     "rules:\n  - id: a\n    title: A\n"
                                     "    expect: {server.requireSigning: maybe, bogus.x: 1}\n"
                                     "    severity: huge\n");
  ASSERT_FALSE(p.ok());
  std::string m(p.status().message());
  EXPECT_NE(m.find("3 problems"), std::string::npos) << m;
  EXPECT_NE(m.find("bogus.x"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown severity 'huge'"), std::string::npos) << m;
}

TEST(PolicyParserTest, SyntaxErrorNamesLine) {
  auto p = ParsePolicy("t.yaml", std::string(kHeader) + "rules: [\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("t.yaml:"), std::string::npos) << p.status();
}

TEST(PolicyParserTest, RejectsWrongApiVersionAndNonMapping) {
  auto p = ParsePolicy("t.yaml",
                       "apiVersion: v0\nname: t\nversion: '1'\nrules:\n"
                       "  - {id: a, title: A, expect: {server.requireSigning: true}}\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("unsupported 'v0'"), std::string::npos) << p.status();
  auto q = ParsePolicy("t.yaml", "- just\n- a list\n");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("top level"), std::string::npos) << q.status();
}

TEST(PolicyParserTest, AcceptsAppliesToAlternatives) {
  auto p = ParsePolicy("t.yaml", std::string(kHeader) + R"(rules:
  - id: a
    title: A
    appliesTo:
      anyOf:
        - {platforms: [windows], windowsBuild: {atLeast: 26100}}
        - {platforms: [samba], hostLabels: {site: "eu-*"}}
    expect: {server.minDialect: {atLeast: SMB_3_1_1}}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->rules[0].applies_to.size(), 2u);
  EXPECT_EQ(*p->rules[0].applies_to[0].windows_build_at_least, 26100u);
  EXPECT_EQ(p->rules[0].applies_to[1].host_labels[0].key, "site");
}

TEST(PolicyParserTest, ReadsListMatchersAndExcludedLabels) {
  auto p = ParsePolicy("t.yaml", std::string(kHeader) + R"(rules:
  - id: a
    title: A
    appliesTo: {platforms: [windows], exceptHostLabels: {role: domain-controller}}
    expect:
      server.nullSessionPipes: {subsetOf: [BROWSER, HydraLSPipe]}
      client.hardenedUncNetlogon: {includes: [MutualAuthentication, integrity]}
      server.nullSessionShares: {subsetOf: []}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  const Rule& r = p->rules[0];
  ASSERT_EQ(r.applies_to.size(), 1u);
  ASSERT_EQ(r.applies_to[0].except_host_labels.size(), 1u);
  EXPECT_EQ(r.applies_to[0].except_host_labels[0].key, "role");
  EXPECT_TRUE(r.applies_to[0].host_labels.empty());
  ASSERT_EQ(r.expect.size(), 3u);
  EXPECT_EQ(r.expect[0].op, Op::kSubsetOf);
  EXPECT_EQ(r.expect[0].items, (std::vector<std::string>{"BROWSER", "HydraLSPipe"}));
  EXPECT_EQ(r.expect[0].expected, "only [BROWSER, HydraLSPipe]");
  EXPECT_EQ(r.expect[1].op, Op::kIncludes);
  EXPECT_EQ(r.expect[1].expected, "includes [MutualAuthentication, integrity]");
  EXPECT_EQ(r.expect[2].op, Op::kSubsetOf);
  EXPECT_TRUE(r.expect[2].items.empty());
}

TEST(PolicyParserTest, ReadsCompressibilityAndExceptHostLabels) {
  auto p = ParsePolicy("t.yaml", std::string(kHeader) + R"(rules:
  - id: a
    title: A
    appliesTo: {hostLabels: {link: wan}, exceptHostLabels: {cpu: busy}}
    shares: {compressibility: {atLeast: 1.5}}
    expect: {share.compressed: true}
  - id: b
    title: B
    shares: {compressibility: {below: 1.1}}
    expect: {share.compressData: false}
)");
  ASSERT_TRUE(p.ok()) << p.status();
  const Rule& a = p->rules[0];
  EXPECT_TRUE(a.share_scoped);
  EXPECT_DOUBLE_EQ(*a.share_compressibility.at_least, 1.5);
  EXPECT_FALSE(a.share_compressibility.below.has_value());
  EXPECT_TRUE(a.share_compressibility.Holds(1.5));
  EXPECT_FALSE(a.share_compressibility.Holds(1.49));
  EXPECT_FALSE(a.share_compressibility.Holds(0));  // unknown never matches
  ASSERT_EQ(a.applies_to[0].except_host_labels.size(), 1u);
  EXPECT_EQ(a.applies_to[0].except_host_labels[0].key, "cpu");
  const Rule& b = p->rules[1];
  EXPECT_TRUE(b.share_compressibility.Holds(1.0));
  EXPECT_FALSE(b.share_compressibility.Holds(1.1));
}

}  // namespace
}  // namespace smbfleet::policy
