#include "agent/core/spool.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/files.h"
#include "common/logging.h"

namespace smbfleet::agent {
namespace {

constexpr char kSuffix[] = ".report";
constexpr char kCountsFile[] = "counts";

// The frame of a spool file, version 1 (all integers little-endian):
//   bytes  0..3   magic "SFSP"
//   byte   4      version, 1
//   bytes  5..7   zero
//   bytes  8..15  payload length n (uint64)
//   bytes 16..47  SHA-256 of the payload
//   bytes 48..    payload: a serialised ReportRequest, exactly n bytes
// A file not starting with the magic is a bare serialised report (agents before the frame).
constexpr char kMagic[] = {'S', 'F', 'S', 'P'};
constexpr unsigned char kVersion = 1;
constexpr size_t kHeaderBytes = 48;
constexpr size_t kMaxFileBytes = size_t{256} << 20;

void PutLe64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string Sha256(absl::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  ::SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

bool SafeId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return true;
}

std::shared_ptr<spdlog::logger> Log() { return Logger("agent"); }

}  // namespace

std::string FrameReport(const std::string& payload) {
  std::string out(kMagic, sizeof(kMagic));
  out.push_back(static_cast<char>(kVersion));
  out.append(3, '\0');
  PutLe64(payload.size(), &out);
  out += Sha256(payload);
  out += payload;
  return out;
}

absl::StatusOr<std::string> UnframeReport(const std::string& file_bytes, const std::string& what) {
  if (file_bytes.size() < sizeof(kMagic) ||
      std::memcmp(file_bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return file_bytes;  // written before the frame
  }
  if (file_bytes.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(what, ": spool file torn: ", file_bytes.size(),
                                            " bytes, shorter than its header"));
  }
  if (static_cast<unsigned char>(file_bytes[4]) != kVersion) {
    return absl::DataLossError(absl::StrCat(what, ": spool file version ",
                                            static_cast<unsigned char>(file_bytes[4]),
                                            ", this agent reads version ", kVersion));
  }
  uint64_t length = GetLe64(file_bytes.data() + 8);
  if (length != file_bytes.size() - kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(what, ": spool file torn: header says ", length,
                                            " bytes of report, file holds ",
                                            file_bytes.size() - kHeaderBytes));
  }
  std::string payload = file_bytes.substr(kHeaderBytes);
  if (Sha256(payload) != file_bytes.substr(16, SHA256_DIGEST_LENGTH)) {
    return absl::DataLossError(absl::StrCat(what, ": spool file corrupt: checksum mismatch"));
  }
  return payload;
}

Spool::Spool(std::string dir, size_t max_reports)
    : Spool(std::move(dir), SpoolLimits{max_reports}) {}

Spool::Spool(std::string dir, SpoolLimits limits, std::function<absl::Time()> now)
    : dir_(std::move(dir)), limits_(limits), now_(std::move(now)) {}

std::vector<Spool::Entry> Spool::Entries() const {
  std::vector<Entry> out;
  absl::StatusOr<std::vector<DirEntry>> files = ListDirectory(dir_);
  if (!files.ok()) return out;
  for (DirEntry& file : *files) {
    const std::string& name = file.name;
    if (!absl::EndsWith(name, kSuffix)) continue;
    size_t dash = name.find('-');
    if (dash == std::string::npos) continue;
    Entry entry;
    if (!absl::SimpleAtoi(name.substr(0, dash), &entry.sequence)) continue;
    entry.id = name.substr(dash + 1, name.size() - dash - 1 - (sizeof(kSuffix) - 1));
    if (!file.regular) continue;
    entry.bytes = file.bytes;
    entry.allocated = file.allocated;
    entry.modified = file.modified;
    entry.file = std::move(file.name);
    out.push_back(std::move(entry));
  }
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.sequence < b.sequence; });
  return out;
}

void Spool::DropWhile(std::vector<Entry>* entries, absl::string_view why,
                      const std::function<bool(const std::vector<Entry>&)>& over) {
  while (!entries->empty() && over(*entries)) {
    const Entry& oldest = entries->front();
    Log()->warn("spool {}: dropping the oldest report {} ({})", dir_, LogSafe(oldest.id),
                std::string(why));
    if (auto s = RemoveFileDurably(absl::StrCat(dir_, "/", oldest.file)); !s.ok()) {
      Log()->warn("spool {}: {}", dir_, LogSafe(s));
    }
    entries->erase(entries->begin());
    ++dropped_;
    ++counts_.dropped;
  }
}

absl::Status Spool::Open() {
  if (auto s = MakeDirs(dir_, 0700); !s.ok()) return s;
  // A kill -9 during a write leaves its temp file; the report it held was never Put.
  if (absl::StatusOr<std::vector<DirEntry>> files = ListDirectory(dir_); files.ok()) {
    std::vector<std::string> leftovers;
    for (const DirEntry& file : *files) {
      if (IsAtomicWriteLeftover(file.name)) leftovers.push_back(file.name);
    }
    for (const auto& name : leftovers) {
      Log()->info("spool {}: removing {}, left by an interrupted write", dir_, LogSafe(name));
      RemoveFile(absl::StrCat(dir_, "/", name)).IgnoreError();
    }
    if (!leftovers.empty()) SyncDirectory(dir_).IgnoreError();
  }
  LoadCounts();
  auto entries = Entries();
  // New files sort after what is already there, even if the clock went backwards.
  sequence_ = static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
  if (!entries.empty()) sequence_ = std::max(sequence_, entries.back().sequence + 1);
  if (limits_.max_age.count() > 0) {
    const absl::Time cutoff = now_() - absl::FromChrono(limits_.max_age);
    DropWhile(&entries, "older than spool.max_age",
              [&](const std::vector<Entry>& e) { return e.front().modified < cutoff; });
  }
  DropWhile(&entries, "over spool.max_reports",
            [&](const std::vector<Entry>& e) { return e.size() > limits_.max_reports; });
  if (dropped_ > 0) SaveCounts();
  return absl::OkStatus();
}

std::string Spool::PathOf(const std::string& report_id) const {
  for (const auto& e : Entries()) {
    if (e.id == report_id) return absl::StrCat(dir_, "/", e.file);
  }
  return "";
}

absl::Status Spool::Put(const smbfleet::v1::ReportRequest& report) {
  if (!SafeId(report.report_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("report id '", report.report_id(), "' is not safe as a file name"));
  }
  std::string payload;
  if (!report.SerializeToString(&payload)) return absl::InternalError("cannot serialise report");
  const std::string bytes = FrameReport(payload);
  if (bytes.size() > limits_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("report ", report.report_id(), " is ",
                                                     bytes.size(), " bytes, over spool.max_bytes ",
                                                     limits_.max_bytes));
  }
  auto entries = Entries();
  const size_t dropped_before = dropped_;
  if (limits_.max_age.count() > 0) {
    const absl::Time cutoff = now_() - absl::FromChrono(limits_.max_age);
    DropWhile(&entries, "older than spool.max_age",
              [&](const std::vector<Entry>& e) { return e.front().modified < cutoff; });
  }
  DropWhile(&entries, "over spool.max_reports",
            [&](const std::vector<Entry>& e) { return e.size() + 1 > limits_.max_reports; });
  DropWhile(&entries, "over spool.max_bytes", [&](const std::vector<Entry>& e) {
    uint64_t total = bytes.size();
    for (const auto& x : e) total += x.bytes;
    return total > limits_.max_bytes;
  });
  const std::string path = absl::StrCat(dir_, "/", sequence_++, "-", report.report_id(), kSuffix);
  absl::Status written = WriteFileAtomic(path, bytes, 0600);
  const bool first_try = written.ok();
  if (absl::IsResourceExhausted(written)) {
    NoteWriteFailure(written);
    if (!entries.empty()) {
      // A full disk: older reports give way to this one, as far as their size makes room for it.
      const uint64_t need = bytes.size();
      uint64_t freed = 0;
      DropWhile(&entries, "no space left for a new report", [&](const std::vector<Entry>& e) {
        if (freed >= need) return false;
        freed += e.front().allocated;
        return true;
      });
      written = WriteFileAtomic(path, bytes, 0600);
    }
  }
  if (!written.ok()) {
    NoteWriteFailure(written);
    ++counts_.dropped;
    ++dropped_;
    ++lost_in_episode_;
    SaveCounts();
    return written;
  }
  // After the report: on a full disk the room made was for it.
  if (dropped_ != dropped_before) SaveCounts();
  if (first_try && write_failing_) {
    Log()->info("spool {}: writes work again; {} reports could not be kept meanwhile", dir_,
                lost_in_episode_);
    write_failing_ = false;
  }
  return absl::OkStatus();
}

void Spool::NoteWriteFailure(const absl::Status& status) {
  // Once per episode: a full disk fails every cycle until space returns.
  if (write_failing_) {
    Log()->debug("spool {}: still cannot write: {}", dir_, LogSafe(status));
    return;
  }
  Log()->error(
      "spool {}: cannot write a report: {}; the oldest reports give way to new ones where that "
      "makes room, new ones are lost where it does not (logged once, until writes work again)",
      dir_, LogSafe(status));
  write_failing_ = true;
  lost_in_episode_ = 0;
}

absl::StatusOr<std::vector<std::string>> Spool::List() const {
  std::vector<std::string> ids;
  for (const auto& e : Entries()) ids.push_back(e.id);
  return ids;
}

absl::StatusOr<smbfleet::v1::ReportRequest> Spool::Get(const std::string& report_id) const {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::NotFoundError(absl::StrCat("no spooled report ", report_id));
  auto bytes = ReadFile(path, kMaxFileBytes);
  if (!bytes.ok()) return bytes.status();
  auto payload = UnframeReport(*bytes, path);
  if (!payload.ok()) return payload.status();
  smbfleet::v1::ReportRequest r;
  if (!r.ParseFromString(*payload)) {
    return absl::DataLossError(absl::StrCat(path, ": spooled report is corrupt: does not parse"));
  }
  return r;
}

absl::Status Spool::Remove(const std::string& report_id) {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::OkStatus();
  return RemoveFileDurably(path);
}

absl::Status Spool::MoveAside(const std::string& report_id, absl::string_view suffix) {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::OkStatus();
  std::string rejected = dir_ + "/rejected";
  if (auto s = MakeDirs(rejected, 0700); !s.ok()) return s;
  std::string target = absl::StrCat(rejected, "/", report_id, suffix);
  if (absl::Status s = RenameFile(path, target); !s.ok()) {
    return absl::InternalError(absl::StrCat("cannot move ", path, " aside: ", s.message()));
  }
  SyncDirectory(rejected).IgnoreError();
  SyncDirectory(dir_).IgnoreError();
  BoundRejected();
  return absl::OkStatus();
}

absl::Status Spool::Reject(const std::string& report_id) {
  absl::Status s = MoveAside(report_id, kSuffix);
  if (s.ok()) {
    ++counts_.rejected;
    SaveCounts();
  }
  return s;
}

absl::Status Spool::MoveCorrupt(const std::string& report_id) {
  absl::Status s = MoveAside(report_id, ".corrupt");
  if (!s.ok()) {
    // It must not be read again and again: remove it instead.
    s = RemoveFileDurably(PathOf(report_id));
  }
  if (s.ok()) {
    ++counts_.corrupt;
    SaveCounts();
  }
  return s;
}

void Spool::BoundRejected() {
  std::string rejected = dir_ + "/rejected";
  struct Aside {
    std::string path;
    absl::Time modified;
  };
  std::vector<Aside> files;
  absl::StatusOr<std::vector<DirEntry>> entries = ListDirectory(rejected);
  if (!entries.ok()) return;
  for (const DirEntry& e : *entries) {
    if (e.name[0] == '.' || !e.regular) continue;
    files.push_back({absl::StrCat(rejected, "/", e.name), e.modified});
  }
  if (files.size() <= limits_.max_rejected) return;
  std::sort(files.begin(), files.end(), [](const Aside& a, const Aside& b) {
    return a.modified != b.modified ? a.modified < b.modified : a.path < b.path;
  });
  for (size_t i = 0; i + limits_.max_rejected < files.size(); ++i) {
    Log()->info("spool {}: removing {} (over spool.max_rejected {})", dir_, LogSafe(files[i].path),
                limits_.max_rejected);
    RemoveFile(files[i].path).IgnoreError();
  }
  SyncDirectory(rejected).IgnoreError();
}

void Spool::Forget(const SpoolCounts& reported) {
  counts_.dropped -= std::min(counts_.dropped, reported.dropped);
  counts_.corrupt -= std::min(counts_.corrupt, reported.corrupt);
  counts_.rejected -= std::min(counts_.rejected, reported.rejected);
  SaveCounts();
}

// "<dropped> <corrupt> <rejected>\n" in <dir>/counts, so that an agent restart does not forget
// reports the collector has not been told about. Best effort: on a full disk it stays in memory.
void Spool::SaveCounts() {
  const std::string path = dir_ + "/" + kCountsFile;
  absl::Status s = counts_.empty()
                       ? RemoveFileDurably(path)
                       : WriteFileAtomic(path,
                                         absl::StrCat(counts_.dropped, " ", counts_.corrupt, " ",
                                                      counts_.rejected, "\n"),
                                         0600);
  if (!s.ok()) Log()->debug("spool {}: counts not saved: {}", dir_, LogSafe(s));
}

void Spool::LoadCounts() {
  const std::string path = dir_ + "/" + kCountsFile;
  if (!FileExists(path)) return;
  auto text = ReadFile(path, 256);
  std::vector<absl::string_view> fields;
  if (text.ok()) fields = absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ');
  SpoolCounts loaded;
  if (!text.ok() || fields.size() != 3 || !absl::SimpleAtoi(fields[0], &loaded.dropped) ||
      !absl::SimpleAtoi(fields[1], &loaded.corrupt) ||
      !absl::SimpleAtoi(fields[2], &loaded.rejected)) {
    Log()->warn("spool {}: {} is not three counts; starting them at zero", dir_, path);
    return;
  }
  counts_ = loaded;
}

}  // namespace smbfleet::agent
