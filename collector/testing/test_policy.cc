#include "collector/testing/test_policy.h"

#include <cstdlib>
#include <iostream>

namespace smbfleet::collector::testing {

namespace {

// The texts below are fixed: a failure to parse them is a broken build.
policy::Policy Parse(const char* name, const char* text) {
  auto p = policy::ParsePolicy(name, text);
  if (!p.ok()) {
    std::cerr << p.status() << "\n";
    std::abort();
  }
  return *std::move(p);
}

}  // namespace

policy::Policy TinyPolicy() {
  return Parse("tiny.yaml", R"(apiVersion: smbfleet/policy/v1
name: baseline
version: "7"
classification:
  classes: [general, pii]
  default: general
  rules: [{name: hr, classification: pii, shareNames: ["hr"]}]
rules:
  - {id: server-signing-required, title: S, expect: {server.requireSigning: true}}
  - {id: pii-encrypted, title: E, shares: {classifications: [pii]},
     expect: {share.encrypted: true}}
)");
}

policy::Policy PlanningPolicy() {
  return Parse("planning.yaml", R"(apiVersion: smbfleet/policy/v1
name: baseline
version: "7"
classification:
  classes: [general, pii]
  default: general
  rules: [{name: hr, classification: pii, shareNames: ["hr"]}]
rules:
  - id: server-signing-required
    title: S
    expect: {server.requireSigning: true}
    remediation:
      - {setting: server.requireSigning, value: true, phase: require}
  - id: pii-encrypted
    title: E
    shares: {classifications: [pii]}
    expect: {share.encrypted: true}
    remediation:
      - {setting: share.encryptData, value: true, phase: protect}
)");
}

}  // namespace smbfleet::collector::testing
