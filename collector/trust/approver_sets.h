#ifndef SMBFLEET_COLLECTOR_TRUST_APPROVER_SETS_H_
#define SMBFLEET_COLLECTOR_TRUST_APPROVER_SETS_H_

// Forwards the approver set an admin published to the agents: kept in the ApproverSetStore,
// sent down every Watch stream open on this replica when published, to each stream when it
// opens (before its pending orders), and to this replica's streams when another replica
// published a newer one (a short poll of the store). The root signature is the agents' to check:
// the collector holds no root key and only checks that the set parses.

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collector/push/stream_registry.h"
#include "collector/store/approver_set_store.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/trust.pb.h"

namespace smbfleet::collector {

// INVALID_ARGUMENT naming what is wrong: the signed bytes are not an ApproverSet, serial 0, a
// signature that is not 64 bytes, an approver without a name or a 32-byte key. Returns the set.
absl::StatusOr<smbfleet::v1::ApproverSet> ParseSignedApproverSet(
    const smbfleet::v1::SignedApproverSet& set);

class ApproverSets {
 public:
  // Neither is owned. poll_interval zero: no poll (one replica).
  ApproverSets(ApproverSetStore* store, StreamRegistry* registry, absl::Duration poll_interval);
  ~ApproverSets();
  ApproverSets(const ApproverSets&) = delete;
  ApproverSets& operator=(const ApproverSets&) = delete;

  // Loads the latest set, then starts the poll.
  absl::Status Start();

  // Checks that it parses, stores it (FAILED_PRECONDITION for a serial not above the latest),
  // and sends it to every stream open here.
  absl::StatusOr<smbfleet::v1::PublishApproverSetResponse> Publish(
      const smbfleet::v1::SignedApproverSet& set, const std::string& published_by);

  // What a stream gets when it opens; nullopt before the first set.
  std::optional<smbfleet::v1::SignedApproverSet> Current() const;

  // Reads the store; a newer set than the one held is sent to every stream open here. Returns
  // how many streams got it (0 when nothing was new).
  absl::StatusOr<size_t> Refresh();

 private:
  // Takes `set` if its serial is above the held one; true when taken.
  bool Take(const smbfleet::v1::SignedApproverSet& set, uint64_t serial);
  size_t Broadcast(const smbfleet::v1::SignedApproverSet& set);
  void Poll();

  ApproverSetStore* store_;
  StreamRegistry* registry_;
  const absl::Duration poll_interval_;
  mutable absl::Mutex mu_;
  std::optional<smbfleet::v1::SignedApproverSet> current_ ABSL_GUARDED_BY(mu_);
  uint64_t serial_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Notification stop_;
  std::thread poller_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_TRUST_APPROVER_SETS_H_
