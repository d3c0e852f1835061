#ifndef SMBFLEET_AGENT_CORE_SPOOL_H_
#define SMBFLEET_AGENT_CORE_SPOOL_H_

// Reports wait here until the collector acknowledges them, so that none is lost to a network
// outage, an agent restart or a power cut. One file per report, "<sequence>-<report_id>.report",
// written to a temp file, fsync'd, renamed and the directory fsync'd before Put returns; removed
// (and the directory fsync'd) only after the collector's ack. Each file is framed with a checksum
// (spool.cc) so that a torn or damaged file is detected and moved aside, never sent or crashed on.
// The spool is bounded by count, bytes and age; the oldest report goes first, and every report
// dropped, found corrupt or refused by the collector is counted until a delivered report has told
// the collector (counts(), Forget()); the counts are kept in <dir>/counts across restarts.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::agent {

struct SpoolLimits {
  size_t max_reports = 200;
  uint64_t max_bytes = uint64_t{256} << 20;     // of report files, frames included
  std::chrono::seconds max_age{7 * 24 * 3600};  // 0: no age limit
  size_t max_rejected = 50;  // files kept in rejected/ (refused and corrupt), oldest go first
};

// Reports lost to the spool's bounds or taken out of it, not yet told to the collector.
struct SpoolCounts {
  uint64_t dropped = 0;   // over a bound, or to make room on a full disk
  uint64_t corrupt = 0;   // failed the checksum or did not parse: moved to rejected/
  uint64_t rejected = 0;  // refused for good by the collector: moved to rejected/
  bool empty() const { return dropped == 0 && corrupt == 0 && rejected == 0; }
};

class Spool {
 public:
  Spool(std::string dir, size_t max_reports);
  // `now` (for the age bound) is for tests.
  Spool(std::string dir, SpoolLimits limits, std::function<absl::Time()> now = absl::Now);

  // Creates the directory (mode 0700), removes temp files a killed agent left behind and drops
  // reports over the bounds.
  absl::Status Open();
  // Durable once it returns OK. Makes room by dropping the oldest reports first; when the write
  // fails for lack of space, drops the oldest reports as far as that frees room for this one and
  // tries once more. A failed write leaves no file behind.
  absl::Status Put(const smbfleet::v1::ReportRequest& report);
  // Report ids, oldest first.
  absl::StatusOr<std::vector<std::string>> List() const;
  // DataLoss (naming the file and what is wrong) for a torn or corrupt file: see MoveCorrupt.
  absl::StatusOr<smbfleet::v1::ReportRequest> Get(const std::string& report_id) const;
  absl::Status Remove(const std::string& report_id);
  // Moves a report the collector will never accept to rejected/, for a person to look at.
  absl::Status Reject(const std::string& report_id);
  // Moves a report Get found corrupt to rejected/ (as <id>.corrupt).
  absl::Status MoveCorrupt(const std::string& report_id);

  SpoolCounts counts() const { return counts_; }
  // Takes counts a delivered report carried off the pending counts.
  void Forget(const SpoolCounts& reported);
  // Reports dropped since Open (not reset by Forget).
  size_t dropped() const { return dropped_; }
  // True from a failed spool write (a full disk, say) until a Put writes at its first try.
  bool write_failing() const { return write_failing_; }

 private:
  struct Entry {
    std::string file;  // <sequence>-<report_id>.report
    uint64_t sequence = 0;
    std::string id;
    uint64_t bytes = 0;
    uint64_t allocated = 0;  // on disk (whole blocks): what removing it frees
    absl::Time modified;
  };
  std::vector<Entry> Entries() const;
  std::string PathOf(const std::string& report_id) const;
  // Drops the oldest entries while `over` says the rest is over a bound.
  void DropWhile(std::vector<Entry>* entries, absl::string_view why,
                 const std::function<bool(const std::vector<Entry>&)>& over);
  absl::Status MoveAside(const std::string& report_id, absl::string_view suffix);
  void BoundRejected();
  void NoteWriteFailure(const absl::Status& status);
  void SaveCounts();
  void LoadCounts();

  std::string dir_;
  SpoolLimits limits_;
  std::function<absl::Time()> now_;
  size_t dropped_ = 0;
  SpoolCounts counts_;
  uint64_t sequence_ = 0;
  bool write_failing_ = false;
  size_t lost_in_episode_ = 0;
};

// The file format (spool.cc): FrameReport() wraps a serialised report, UnframeReport() checks and
// unwraps it, naming `what` (the file) in its DataLoss error. Files without the
// frame (written by agents before it) are taken as a bare serialised report.
std::string FrameReport(const std::string& payload);
absl::StatusOr<std::string> UnframeReport(const std::string& file_bytes, const std::string& what);

}  // namespace smbfleet::agent

#endif  // SMBFLEET_AGENT_CORE_SPOOL_H_
