#include "agent/core/counter_windows.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/core/change_journal.h"
#include "agent/core/durable_file.h"
#include "common/files.h"
#include "common/logging.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent {
namespace {

using google::protobuf::util::TimeUtil;
using smbfleet::v1::ChangeCounters;
using smbfleet::v1::CounterWindow;

constexpr char kSuffix[] = ".counters.json";
constexpr size_t kMaxRecordBytes = 4 << 20;

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(t));
}

std::string Name(const ChangeCounters& c) {
  return absl::StrCat("change ", LogSafe(c.change_id()), " v", c.version());
}

}  // namespace

CounterWindows::CounterWindows(std::string dir, CounterSampler* sampler)
    : dir_(std::move(dir)), sampler_(sampler) {}

std::string CounterWindows::PathOf(const Key& key) const {
  return absl::StrCat(dir_, "/", key.first, "@", key.second, kSuffix);
}

absl::Status CounterWindows::Open() {
  absl::StatusOr<std::vector<DirEntry>> files = ListDirectory(dir_);
  if (!files.ok()) {
    return absl::InternalError(absl::StrCat(dir_, ": cannot list the change journal folder"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const DirEntry& file : *files) {
    if (!file.regular || !absl::EndsWith(file.name, kSuffix)) continue;
    const std::string path = absl::StrCat(dir_, "/", file.name);
    ChangeCounters record;
    absl::StatusOr<std::string> text = ReadFile(path, kMaxRecordBytes);
    bool parsed = text.ok() && google::protobuf::util::JsonStringToMessage(*text, &record).ok() &&
                  ChangeJournal::ValidateChangeId(record.change_id()).ok() &&
                  record.after().has_start();
    if (!parsed || PathOf({record.change_id(), record.version()}) != path) {
      Logger("agent")->error(
          "counters: {} is not a pending after-window record; moved aside to "
          "{}.bad",
          path, path);
      RenameFile(path, path + ".bad").IgnoreError();
      continue;
    }
    records_[{record.change_id(), record.version()}] = std::move(record);
  }
  return absl::OkStatus();
}

CounterWindow CounterWindows::Before() const {
  const absl::Time now = sampler_->Now();
  CounterWindow w = sampler_->Window(now - absl::FromChrono(sampler_->window()), now);
  w.set_complete(true);
  return w;
}

absl::Status CounterWindows::Write(const ChangeCounters& record) const {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (auto s = google::protobuf::util::MessageToJsonString(record, &json, options); !s.ok()) {
    return absl::InternalError(absl::StrCat(Name(record), ": ", s.ToString()));
  }
  return WriteFileDurably(PathOf({record.change_id(), record.version()}), json, 0600);
}

absl::Status CounterWindows::StartAfter(const std::string& change_id, uint64_t version) {
  ChangeCounters record;
  record.set_change_id(change_id);
  record.set_version(version);
  CounterWindow* after = record.mutable_after();
  *after->mutable_start() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(sampler_->Now()));
  *after->mutable_interval() = TimeUtil::MillisecondsToDuration(sampler_->interval().count());
  if (absl::Status s = Write(record); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  records_[{change_id, version}] = std::move(record);
  return absl::OkStatus();
}

void CounterWindows::Tick() {
  const absl::Time now = sampler_->Now();
  const absl::Duration window = absl::FromChrono(sampler_->window());
  bool filled_any = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = records_.begin(); it != records_.end();) {
      ChangeCounters& record = it->second;
      const absl::Time start = FromProto(record.after().start());
      if (now - start > kMaxPendingAge) {
        Logger("agent")->warn("counters: {}: after-window from {} never delivered; dropped",
                              Name(record), absl::FormatTime(start));
        RemoveFile(PathOf(it->first)).IgnoreError();
        it = records_.erase(it);
        continue;
      }
      if (!record.after().complete() && now >= start + window) {
        ChangeCounters filled = record;
        // A sample taken at the apply itself belongs to the window before.
        *filled.mutable_after() = sampler_->Window(start + absl::Nanoseconds(1), start + window);
        *filled.mutable_after()->mutable_start() = record.after().start();
        filled.mutable_after()->set_complete(true);
        if (absl::Status s = Write(filled); !s.ok()) {
          Logger("agent")->warn("counters: {}: {}", Name(record), LogSafe(s));
        }
        // Kept in memory even when the write failed: the samples are still worth sending.
        record = std::move(filled);
        filled_any = true;
      }
      ++it;
    }
  }
  if (filled_any && on_filled_) on_filled_();
}

std::vector<ChangeCounters> CounterWindows::Due() {
  std::vector<ChangeCounters> due;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, record] : records_) {
    if (record.after().complete()) due.push_back(record);
  }
  std::sort(due.begin(), due.end(), [](const ChangeCounters& a, const ChangeCounters& b) {
    return FromProto(a.after().start()) < FromProto(b.after().start());
  });
  return due;
}

void CounterWindows::Delivered(const std::vector<ChangeCounters>& sent) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ChangeCounters& c : sent) {
    Key key{c.change_id(), c.version()};
    if (records_.erase(key) == 0) continue;
    if (absl::Status s = RemoveFileDurably(PathOf(key)); !s.ok()) {
      Logger("agent")->warn("counters: {}: {}", Name(c), LogSafe(s));
    }
  }
}

size_t CounterWindows::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

}  // namespace smbfleet::agent
