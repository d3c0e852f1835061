#ifndef SMBFLEET_AGENT_CORE_APPROVER_TRUST_H_
#define SMBFLEET_AGENT_CORE_APPROVER_TRUST_H_

// The approver keys this host trusts: the ones pinned in its config, plus those of the newest
// approver set signed by the offline root it pins (trust.root). A set is taken only with a valid
// root signature and a serial greater than the one held, and is kept in a durable file so that a
// restart neither forgets it nor accepts an older one again. A key missing from the newest set
// no longer counts (unless pinned): that is how an approver is revoked on the agents.

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/core/agent_config.h"
#include "agent/core/order_verifier.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::agent {

class ApproverTrust {
 public:
  // state_path: where the newest accepted set is kept (its directory must exist at Open()).
  ApproverTrust(TrustConfig config, std::string state_path);

  // Loads the kept set. One that no longer verifies (the root changed) or cannot be read is
  // ignored with a warning: the pinned keys still count.
  absl::Status Open();

  // Verifies, checks the serial, keeps the set durably, then trusts its keys. PERMISSION_DENIED
  // for a bad signature or no root, FAILED_PRECONDITION for a serial not greater than the held one.
  absl::Status Accept(const smbfleet::v1::SignedApproverSet& signed_set);

  TrustedKeys Keys() const;
  uint64_t serial() const;
  uint32_t min_approvals() const { return config_.min_approvals; }

 private:
  const TrustConfig config_;
  const std::string state_path_;
  mutable absl::Mutex mu_;
  uint64_t serial_ ABSL_GUARDED_BY(mu_) = 0;
  TrustedKeys keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_APPROVER_TRUST_H_
