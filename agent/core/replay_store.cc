#include "agent/core/replay_store.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/core/durable_file.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent {
namespace {

constexpr size_t kMaxFileBytes = 64 << 20;
constexpr absl::Duration kKeepAfterExpiry = absl::Hours(24);

}  // namespace

ReplayStore::ReplayStore(std::string path) : path_(std::move(path)) {}

absl::Status ReplayStore::Open() {
  entries_.clear();
  absl::StatusOr<std::string> text = ReadFile(path_, kMaxFileBytes);
  if (absl::IsNotFound(text.status())) return absl::OkStatus();
  RETURN_IF_ERROR(text.status());
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_array()) {
    return absl::DataLossError(absl::StrCat(path_, ": not a JSON array of applied orders"));
  }
  for (const nlohmann::json& e : doc) {
    if (!e.is_object() || !e.contains("change_id") || !e["change_id"].is_string() ||
        !e.contains("version") || !e["version"].is_number_unsigned() || !e.contains("nonce") ||
        !e["nonce"].is_string() || !e.contains("not_after") || !e["not_after"].is_number()) {
      return absl::DataLossError(
          absl::StrCat(path_, ": an entry lacks change_id, version, nonce or not_after"));
    }
    entries_[Key{e["change_id"].get<std::string>(), e["version"].get<uint64_t>(),
                 absl::HexStringToBytes(e["nonce"].get<std::string>())}] =
        e["not_after"].get<int64_t>();
  }
  return absl::OkStatus();
}

bool ReplayStore::Seen(const std::string& change_id, uint64_t version,
                       const std::string& nonce) const {
  return entries_.count(Key{change_id, version, nonce}) > 0;
}

absl::Status ReplayStore::Record(const std::string& change_id, uint64_t version,
                                 const std::string& nonce, absl::Time not_after, absl::Time now) {
  std::map<Key, int64_t> next;
  const int64_t horizon = absl::ToUnixSeconds(now - kKeepAfterExpiry);
  for (const auto& [key, expiry] : entries_) {
    if (expiry >= horizon) next.emplace(key, expiry);
  }
  next[Key{change_id, version, nonce}] = absl::ToUnixSeconds(not_after);
  nlohmann::json doc = nlohmann::json::array();
  for (const auto& [key, expiry] : next) {
    doc.push_back({{"change_id", std::get<0>(key)},
                   {"version", std::get<1>(key)},
                   {"nonce", absl::BytesToHexString(std::get<2>(key))},
                   {"not_after", expiry}});
  }
  // Change ids are checked (ChangeJournal::ValidateChangeId) and nonces hex: dump cannot throw.
  RETURN_IF_ERROR(WriteFileDurably(path_, doc.dump(1), 0600));
  entries_ = std::move(next);
  return absl::OkStatus();
}

}  // namespace smbfleet::agent
