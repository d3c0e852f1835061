#ifndef SMBFLEET_AGENT_CORE_REPLAY_STORE_H_
#define SMBFLEET_AGENT_CORE_REPLAY_STORE_H_

// The signed orders this host has acted on, by (change id, version, approval nonce), kept in one
// durable file so that a replayed order is refused even after a restart or after the change
// journal pruned its entry. An entry is dropped a day after its not-after: by then the order is
// refused as expired anyway.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace smbfleet::agent {

class ReplayStore {
 public:
  explicit ReplayStore(std::string path);

  // Loads the file; a missing file is an empty store, an unreadable one an error (refusing to
  // start is safer than forgetting what was applied).
  absl::Status Open();

  bool Seen(const std::string& change_id, uint64_t version, const std::string& nonce) const;
  // Adds the order and writes the file durably before returning; prunes entries whose not-after
  // is more than a day before `now`.
  absl::Status Record(const std::string& change_id, uint64_t version, const std::string& nonce,
                      absl::Time not_after, absl::Time now);

  size_t size() const { return entries_.size(); }

 private:
  using Key = std::tuple<std::string, uint64_t, std::string>;
  std::string path_;
  std::map<Key, int64_t> entries_;  // -> not-after, unix seconds
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_REPLAY_STORE_H_
