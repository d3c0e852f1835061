#include "collector/testing/test_policy.h"

#include <cstdlib>
#include <iostream>

namespace smbfleet::collector::testing {

policy::Policy TinyPolicy() {
  auto p = policy::ParsePolicy("tiny.yaml", R"(apiVersion: smbfleet/policy/v1
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
  if (!p.ok()) {  // the text above is fixed: a failure is a broken build
    std::cerr << p.status() << "\n";
    std::abort();
  }
  return *std::move(p);
}

}  // namespace smbfleet::collector::testing
