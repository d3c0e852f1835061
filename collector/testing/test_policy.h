#ifndef SMBFLEET_COLLECTOR_TESTING_TEST_POLICY_H_
#define SMBFLEET_COLLECTOR_TESTING_TEST_POLICY_H_

// A small policy for collector tests: two classes (share "hr" is pii), a host rule (server
// signing required) and a share rule (pii shares encrypted).

#include "policy/policy.h"

namespace smbfleet::collector::testing {

policy::Policy TinyPolicy();
// TinyPolicy's rules with remediation: require server signing; encrypt the pii share "hr".
policy::Policy PlanningPolicy();

}  // namespace smbfleet::collector::testing

#endif  // SMBFLEET_COLLECTOR_TESTING_TEST_POLICY_H_
