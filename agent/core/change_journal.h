#ifndef SMBFLEET_AGENT_CORE_CHANGE_JOURNAL_H_
#define SMBFLEET_AGENT_CORE_CHANGE_JOURNAL_H_

// The agent's record of change orders, one durable file per order (change id, version) in the
// journal folder, so that a crash between apply and ack is finished at the next start and an
// order seen twice is applied once. States, in order:
//   started    the before-values are on disk; the apply may have begun
//   finished   the ack (result, before, after) is decided and not yet delivered
//   acked      the collector has the ack; kept to answer a resent order with the same ack
// Files are JSON (protobuf's mapping for the order and the ack), readable by an operator.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

enum class JournalState { kStarted, kFinished, kAcked };

struct JournalEntry {
  JournalState state = JournalState::kStarted;
  smbfleet::v1::ChangeOrder order;
  std::vector<smbfleet::v1::SettingChange> before;  // read before the apply, in order's order
  smbfleet::v1::AckChangeRequest ack;               // finished and acked only
  int64_t updated_unix_ms = 0;                      // orders the completed-id list
};

class ChangeJournal {
 public:
  // Keeps at most keep_done finished/acked entries (the oldest acked ones are removed first).
  explicit ChangeJournal(std::string dir, size_t keep_done = 1000);

  // Creates the folder and loads every entry; a file that cannot be parsed is moved aside to
  // <name>.bad (and logged) rather than stopping the agent.
  absl::Status Open();

  // The change id is part of a file name: letters, digits, '.', '_', '-', ':'; 1..128 bytes.
  static absl::Status ValidateChangeId(const std::string& change_id);

  const JournalEntry* Find(const std::string& change_id, uint64_t version) const;
  // Writes the entry durably (temp file, fsync, rename, directory fsync), then keeps it.
  absl::Status Put(JournalEntry entry);

  std::vector<JournalEntry> InState(JournalState state) const;
  // Change ids of finished and acked orders, most recent first, at most max.
  std::vector<std::string> RecentlyCompleted(size_t max) const;

  const std::string& dir() const { return dir_; }

 private:
  using Key = std::pair<std::string, uint64_t>;
  std::string PathOf(const Key& key) const;
  void Prune();

  std::string dir_;
  size_t keep_done_;
  int64_t last_ms_ = 0;  // entries get strictly increasing times, even within a millisecond
  std::map<Key, JournalEntry> entries_;
};

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_CHANGE_JOURNAL_H_
