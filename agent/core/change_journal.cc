#include "agent/core/change_journal.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/core/durable_file.h"
#include "common/files.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent {
namespace {

constexpr char kSuffix[] = ".order.json";
constexpr size_t kMaxEntryBytes = 1 << 20;

const char* StateName(JournalState s) {
  switch (s) {
    case JournalState::kStarted:
      return "started";
    case JournalState::kFinished:
      return "finished";
    case JournalState::kAcked:
      return "acked";
  }
  return "started";
}

absl::StatusOr<JournalState> ParseState(const std::string& s) {
  if (s == "started") return JournalState::kStarted;
  if (s == "finished") return JournalState::kFinished;
  if (s == "acked") return JournalState::kAcked;
  return absl::InvalidArgumentError(absl::StrCat("unknown state '", s, "'"));
}

absl::StatusOr<nlohmann::json> MessageJson(const google::protobuf::Message& m) {
  ASSIGN_OR_RETURN(std::string text, ToJson(m, /*pretty=*/false));
  return nlohmann::json::parse(text);
}

absl::StatusOr<std::string> Serialize(const JournalEntry& e) {
  nlohmann::json j;
  j["state"] = StateName(e.state);
  j["updatedUnixMs"] = e.updated_unix_ms;
  ASSIGN_OR_RETURN(j["order"], MessageJson(e.order));
  j["before"] = nlohmann::json::array();
  for (const auto& b : e.before) {
    ASSIGN_OR_RETURN(nlohmann::json v, MessageJson(b));
    j["before"].push_back(std::move(v));
  }
  if (e.state != JournalState::kStarted) {
    ASSIGN_OR_RETURN(j["ack"], MessageJson(e.ack));
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<JournalEntry> Parse(const std::string& path, const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("state") || !j["state"].is_string() ||
      !j.contains("order")) {
    return absl::DataLossError(absl::StrCat(path, ": not a journal entry"));
  }
  JournalEntry e;
  ASSIGN_OR_RETURN(e.state, ParseState(j["state"].get<std::string>()));
  if (j.contains("updatedUnixMs") && j["updatedUnixMs"].is_number_integer()) {
    e.updated_unix_ms = j["updatedUnixMs"].get<int64_t>();
  }
  RETURN_IF_ERROR(FromJson(j["order"].dump(), path + ": order", &e.order));
  if (j.contains("before") && j["before"].is_array()) {
    for (const auto& b : j["before"]) {
      smbfleet::v1::SettingChange s;
      RETURN_IF_ERROR(FromJson(b.dump(), path + ": before", &s));
      e.before.push_back(std::move(s));
    }
  }
  if (e.state != JournalState::kStarted) {
    if (!j.contains("ack")) return absl::DataLossError(absl::StrCat(path, ": no ack"));
    RETURN_IF_ERROR(FromJson(j["ack"].dump(), path + ": ack", &e.ack));
  }
  return e;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ChangeJournal::ChangeJournal(std::string dir, size_t keep_done)
    : dir_(std::move(dir)), keep_done_(keep_done) {}

absl::Status ChangeJournal::ValidateChangeId(const std::string& id) {
  if (id.empty() || id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("change id must be 1..128 bytes, got ", id.size()));
  }
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == ':';
    if (!ok || id == "." || id == "..") {
      return absl::InvalidArgumentError(
          "change id may hold only letters, digits, '.', '_', '-' and ':'");
    }
  }
  return absl::OkStatus();
}

std::string ChangeJournal::PathOf(const Key& key) const {
  return absl::StrCat(dir_, "/", key.first, "@", key.second, kSuffix);
}

absl::Status ChangeJournal::Open() {
  RETURN_IF_ERROR(MakeDirs(dir_, 0700));
  absl::StatusOr<std::vector<DirEntry>> files = ListDirectory(dir_);
  if (!files.ok()) return absl::InternalError(absl::StrCat(dir_, ": cannot list the journal"));
  std::vector<std::string> names;
  for (DirEntry& file : *files) names.push_back(std::move(file.name));
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string path = absl::StrCat(dir_, "/", name);
    if (absl::StartsWith(name, ".")) {
      RemoveFile(path).IgnoreError();  // a temp file from a write that never got renamed
      continue;
    }
    if (!absl::EndsWith(name, kSuffix)) continue;
    absl::StatusOr<JournalEntry> entry = [&]() -> absl::StatusOr<JournalEntry> {
      ASSIGN_OR_RETURN(std::string text, ReadFile(path, kMaxEntryBytes));
      return Parse(path, text);
    }();
    if (!entry.ok()) {
      Logger("agent")->error("change journal: {}; moved aside to {}.bad", LogSafe(entry.status()),
                             path);
      RenameFile(path, path + ".bad").IgnoreError();
      continue;
    }
    Key key{entry->order.change_id(), entry->order.version()};
    if (PathOf(key) != path) continue;  // not written by this journal
    last_ms_ = std::max(last_ms_, entry->updated_unix_ms);
    entries_[key] = *std::move(entry);
  }
  return absl::OkStatus();
}

const JournalEntry* ChangeJournal::Find(const std::string& change_id, uint64_t version) const {
  auto it = entries_.find(Key{change_id, version});
  return it == entries_.end() ? nullptr : &it->second;
}

absl::Status ChangeJournal::Put(JournalEntry entry) {
  RETURN_IF_ERROR(ValidateChangeId(entry.order.change_id()));
  entry.updated_unix_ms = std::max(NowUnixMs(), last_ms_ + 1);
  last_ms_ = entry.updated_unix_ms;
  ASSIGN_OR_RETURN(std::string text, Serialize(entry));
  Key key{entry.order.change_id(), entry.order.version()};
  RETURN_IF_ERROR(WriteFileDurably(PathOf(key), text, 0600));
  entries_[key] = std::move(entry);
  Prune();
  return absl::OkStatus();
}

std::vector<JournalEntry> ChangeJournal::InState(JournalState state) const {
  std::vector<JournalEntry> out;
  for (const auto& [key, e] : entries_) {
    if (e.state == state) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const JournalEntry& a, const JournalEntry& b) {
    return a.updated_unix_ms < b.updated_unix_ms;
  });
  return out;
}

std::vector<std::string> ChangeJournal::RecentlyCompleted(size_t max) const {
  std::vector<const JournalEntry*> done;
  for (const auto& [key, e] : entries_) {
    if (e.state != JournalState::kStarted) done.push_back(&e);
  }
  std::sort(done.begin(), done.end(), [](const JournalEntry* a, const JournalEntry* b) {
    return a->updated_unix_ms > b->updated_unix_ms;
  });
  std::vector<std::string> out;
  for (const JournalEntry* e : done) {
    if (out.size() >= max) break;
    if (std::find(out.begin(), out.end(), e->order.change_id()) == out.end()) {
      out.push_back(e->order.change_id());
    }
  }
  return out;
}

void ChangeJournal::Prune() {
  std::vector<std::pair<int64_t, Key>> acked;
  for (const auto& [key, e] : entries_) {
    if (e.state == JournalState::kAcked) acked.push_back({e.updated_unix_ms, key});
  }
  if (acked.size() <= keep_done_) return;
  std::sort(acked.begin(), acked.end());
  for (size_t i = 0; i + keep_done_ < acked.size(); ++i) {
    RemoveFile(PathOf(acked[i].second)).IgnoreError();
    entries_.erase(acked[i].second);
  }
}

}  // namespace smbfleet::agent
