#include "agent/core/spool.h"

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/files.h"
#include "common/logging.h"

namespace smbfleet::agent {
namespace {

constexpr char kSuffix[] = ".report";

struct Entry {
  std::string file;  // <sequence>-<report_id>.report
  uint64_t sequence;
  std::string id;
};

std::vector<Entry> Entries(const std::string& dir) {
  std::vector<Entry> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!absl::EndsWith(name, kSuffix)) continue;
    size_t dash = name.find('-');
    if (dash == std::string::npos) continue;
    uint64_t seq = 0;
    if (!absl::SimpleAtoi(name.substr(0, dash), &seq)) continue;
    out.push_back(
        {name, seq, name.substr(dash + 1, name.size() - dash - 1 - (sizeof(kSuffix) - 1))});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.sequence < b.sequence; });
  return out;
}

bool SafeId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
  }
  return true;
}

}  // namespace

Spool::Spool(std::string dir, size_t max_reports)
    : dir_(std::move(dir)), max_reports_(max_reports) {}

absl::Status Spool::Open() {
  if (auto s = MakeDirs(dir_, 0700); !s.ok()) return s;
  auto entries = Entries(dir_);
  // New files sort after what is already there, even if the clock went backwards.
  sequence_ = static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
  if (!entries.empty()) sequence_ = std::max(sequence_, entries.back().sequence + 1);
  return absl::OkStatus();
}

std::string Spool::PathOf(const std::string& report_id) const {
  for (const auto& e : Entries(dir_)) {
    if (e.id == report_id) return absl::StrCat(dir_, "/", e.file);
  }
  return "";
}

absl::Status Spool::Put(const smbfleet::v1::ReportRequest& report) {
  if (!SafeId(report.report_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("report id '", report.report_id(), "' is not safe as a file name"));
  }
  auto entries = Entries(dir_);
  while (entries.size() >= max_reports_) {
    Logger("agent")->warn("spool full ({} reports): dropping the oldest, {}", max_reports_,
                          LogSafe(entries.front().id));
    ::unlink(absl::StrCat(dir_, "/", entries.front().file).c_str());
    entries.erase(entries.begin());
    ++dropped_;
  }
  std::string bytes;
  if (!report.SerializeToString(&bytes)) return absl::InternalError("cannot serialise report");
  return WriteFileAtomic(absl::StrCat(dir_, "/", sequence_++, "-", report.report_id(), kSuffix),
                         bytes, 0600);
}

absl::StatusOr<std::vector<std::string>> Spool::List() const {
  std::vector<std::string> ids;
  for (const auto& e : Entries(dir_)) ids.push_back(e.id);
  return ids;
}

absl::StatusOr<smbfleet::v1::ReportRequest> Spool::Get(const std::string& report_id) const {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::NotFoundError(absl::StrCat("no spooled report ", report_id));
  auto bytes = ReadFile(path, 256 << 20);
  if (!bytes.ok()) return bytes.status();
  smbfleet::v1::ReportRequest r;
  if (!r.ParseFromString(*bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": spooled report is corrupt"));
  }
  return r;
}

absl::Status Spool::Remove(const std::string& report_id) {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::OkStatus();
  if (::unlink(path.c_str()) != 0) return absl::InternalError(absl::StrCat("cannot remove ", path));
  return absl::OkStatus();
}

absl::Status Spool::Reject(const std::string& report_id) {
  std::string path = PathOf(report_id);
  if (path.empty()) return absl::OkStatus();
  std::string rejected = dir_ + "/rejected";
  if (auto s = MakeDirs(rejected, 0700); !s.ok()) return s;
  std::string target = absl::StrCat(rejected, "/", report_id, kSuffix);
  if (::rename(path.c_str(), target.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot move ", path, " to ", target));
  }
  return absl::OkStatus();
}

}  // namespace smbfleet::agent
