#ifndef SMBFLEET_AGENT_CORE_TESTING_TEST_APPROVALS_H_
#define SMBFLEET_AGENT_CORE_TESTING_TEST_APPROVALS_H_

// Real Ed25519 approver keys and signed orders for agent tests: what the collector forwards
// after approvers signed with `smbfleetctl changes approve`.

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/core/agent_config.h"
#include "common/approval_signing.h"
#include "smbfleet/v1/agent.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::agent::testing {

class TestApprovals {
 public:
  // One key each for "alice", "bob", "carol", "mallory" and the root.
  TestApprovals();

  const Ed25519Key& key(const std::string& approver) const { return keys_.at(approver); }
  const Ed25519Key& root() const { return root_; }

  // trust.approvers pinning the named approvers' keys, trust.root the test root.
  TrustConfig Trust(const std::vector<std::string>& pinned, uint32_t min_approvals = 1) const;

  // The payload the collector would build for `order`: its settings and options for each of
  // hosts, its not-after (else default_not_after), proposed by "paula".
  static smbfleet::v1::ApprovalPayload PayloadOf(const smbfleet::v1::ChangeOrder& order,
                                                 const std::vector<std::string>& hosts,
                                                 absl::Time default_not_after);

  // The order carrying CanonicalApprovalPayload(payload) and a signature by each approver.
  smbfleet::v1::ChangeOrder Sign(smbfleet::v1::ChangeOrder order,
                                 const smbfleet::v1::ApprovalPayload& payload,
                                 const std::vector<std::string>& approvers) const;
  // The same as a "smbfleet-approval-v2" order for `host`, as the collector sends it: the
  // payload's hosts become a Merkle tree whose head the approvers sign, and the order carries
  // `host`'s own order with its inclusion proof (none when `host` is not among the hosts).
  smbfleet::v1::ChangeOrder SignV2(smbfleet::v1::ChangeOrder order,
                                   const smbfleet::v1::ApprovalPayload& payload,
                                   const std::vector<std::string>& approvers,
                                   const std::string& host) const;
  // The signature of `approver` over `bytes`.
  smbfleet::v1::OrderSignature SignatureBy(const std::string& approver,
                                           const std::string& bytes) const;

  // An approver set of the named approvers' keys, signed by the root (or by `signer`'s key).
  smbfleet::v1::SignedApproverSet Set(uint64_t serial, const std::vector<std::string>& approvers,
                                      const std::string& signer = "") const;

 private:
  std::map<std::string, Ed25519Key> keys_;
  Ed25519Key root_;
};

}  // namespace smbfleet::agent::testing

#endif  // SMBFLEET_AGENT_CORE_TESTING_TEST_APPROVALS_H_
