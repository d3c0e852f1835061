#ifndef SMBFLEET_COLLECTOR_STORE_HOST_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_HOST_STORE_H_

// Hosts, their reports and their latest posture.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector {

enum class SaveOutcome { kStored, kUnchanged, kDuplicate };

struct SavedReport {
  SaveOutcome outcome = SaveOutcome::kStored;
  // Whether the host's current posture says what this report says (the same digest) once it
  // is saved. False for a report collected before the host's current state (kept in history
  // only: kStored or kUnchanged against the current digest) and for a duplicate the host has
  // moved on from: evaluating either would evaluate the past.
  bool current = true;
  // A digest-only report whose digest is not the host's current posture's (or of a host with
  // none): nothing was written, and the agent is to send the posture.
  bool unknown_digest = false;
};

struct IncomingReport {
  std::string host;       // from the client certificate
  std::string report_id;  // validated UUID
  std::string reason;
  // Null for a digest-only report: the agent says its posture has `digest`, and it is stored
  // only if that is the host's current posture (as an unchanged report), else unknown_digest.
  const smbfleet::v1::Posture* posture = nullptr;
  std::string digest;  // PostureDigest(*posture), required: equal digests mean an unchanged host
  google::protobuf::Timestamp collected_at;  // of a digest-only report; else posture's
  size_t size_bytes = 0;
  absl::Time received_at;
};

// StoreDigestReports' answer for one digest-only report.
struct SavedDigestReport {
  SavedReport saved;
  // hosts.evaluation_key as read in the transaction that stored the report, when the store
  // reads it there (nullopt: the caller asks ComplianceStore::EvaluationKey).
  std::optional<std::string> evaluation_key;
};

struct HostRecord {
  // labels and reported_labels are both what the agent reported; AdminApi replaces labels with
  // the trusted ones (EnrollmentStore) before showing them.
  smbfleet::v1::HostSummary summary;
  // The latest stored posture; each share carries the classification of the host's latest
  // evaluation (the agent does not classify).
  smbfleet::v1::Posture posture;
  std::string last_report_id;
  // PostureDigest of `posture` as stored with it (hex); "" for a host with no posture.
  std::string posture_digest;
};

// A host's current posture as its evaluation reads it (HostStore::CurrentPostures).
struct StoredPosture {
  // As stored, with the latest benchmark run (as GetHost has it). Share classifications are
  // evaluation's output: whatever the posture carries of them is not to be evaluated.
  smbfleet::v1::Posture posture;
  std::string digest;  // hex, as HostRecord::posture_digest
};

// ListHosts filters, all ANDed (admin.proto ListHostsRequest).
struct HostQuery {
  std::string name_prefix;
  std::string after_name;  // page token: names strictly greater
  uint32_t limit = 100;
  std::string query = "";                          // case-insensitive substring of the name
  std::map<std::string, std::string> labels = {};  // trusted labels (host_labels), all must match
  std::string os = "";  // case-insensitive substring of os name or version
  smbfleet::v1::Platform platform = smbfleet::v1::PLATFORM_UNSPECIFIED;  // UNSPECIFIED: any
  std::string failing_rule = "";  // a NON_COMPLIANT result of the active policy for it; "*": any
  std::optional<absl::Time> seen_before = std::nullopt;  // only hosts last seen before this
};

struct HostPage {
  std::vector<smbfleet::v1::HostSummary> hosts;  // at most limit, by name
  uint32_t total = 0;                            // hosts matching the filters, all pages
};

// Every failure is an absl::Status naming what failed; no database exception crosses this
// interface.
class HostStore {
 public:
  virtual ~HostStore() = default;
  // In one transaction. The same report_id again from the same host (a resend, or two
  // connections at once): kDuplicate, nothing written; another host's ids do not count. Same
  // digest as the host's latest posture: kUnchanged, only last_seen (and benchmarks) move. A
  // report collected before the host's current state (posture.collected_at older than that of
  // the newest report applied) goes to history only: the current state stays (current=false).
  // A digest-only report (posture null) with another digest than the host's current posture:
  // unknown_digest, nothing written (not even last_seen).
  // INVALID_ARGUMENT when the database refuses a value of the report (no resend can succeed).
  virtual absl::StatusOr<SavedReport> StoreReport(const IncomingReport& report) = 0;
  // Digest-only reports (posture null) of distinct hosts, each handled as StoreReport would,
  // in one transaction when the store can: the answers in the order of `reports`. An error
  // fails them all and stores none of them. The default stores them one by one.
  virtual absl::StatusOr<std::vector<SavedDigestReport>> StoreDigestReports(
      const std::vector<IncomingReport>& reports) {
    std::vector<SavedDigestReport> out;
    out.reserve(reports.size());
    for (const IncomingReport& r : reports) {
      absl::StatusOr<SavedReport> saved = StoreReport(r);
      if (!saved.ok()) return saved.status();
      out.push_back({*saved, std::nullopt});
    }
    return out;
  }
  // Reports with a posture, of distinct hosts, each handled as StoreReport would, in one
  // transaction when the store can: the answers in the order of `reports`. An error fails them
  // all and stores none of them; INVALID_ARGUMENT when the database refuses a value of one (the
  // caller stores each alone to learn which). In a batch a duplicate moves its host's last_seen
  // (the host was heard from), where StoreReport writes nothing. The default stores them one by
  // one.
  virtual absl::StatusOr<std::vector<SavedReport>> StoreReports(
      const std::vector<IncomingReport>& reports) {
    std::vector<SavedReport> out;
    out.reserve(reports.size());
    for (const IncomingReport& r : reports) {
      absl::StatusOr<SavedReport> saved = StoreReport(r);
      if (!saved.ok()) return saved.status();
      out.push_back(*saved);
    }
    return out;
  }
  // StoreReport's outcome only.
  absl::StatusOr<SaveOutcome> SaveReport(const IncomingReport& report) {
    absl::StatusOr<SavedReport> saved = StoreReport(report);
    if (!saved.ok()) return saved.status();
    return saved->outcome;
  }
  virtual absl::StatusOr<std::vector<smbfleet::v1::HostSummary>> ListHosts(
      const HostQuery& query) = 0;
  // One page of the hosts matching every filter of `query`, and how many match in all.
  virtual absl::StatusOr<HostPage> FindHosts(const HostQuery& query) {
    return absl::UnimplementedError("this host store does not filter hosts");
  }
  virtual absl::StatusOr<std::optional<HostRecord>> GetHost(const std::string& name) = 0;
  // GetHost of each of `names` in one read where the store can (a change's hosts): by name,
  // the hosts that exist. The default reads them one at a time.
  virtual absl::StatusOr<std::map<std::string, HostRecord>> GetHosts(
      const std::vector<std::string>& names) {
    std::map<std::string, HostRecord> out;
    for (const std::string& name : names) {
      absl::StatusOr<std::optional<HostRecord>> record = GetHost(name);
      if (!record.ok()) return record.status();
      if (record->has_value()) out[name] = **std::move(record);
    }
    return out;
  }

  // The current postures of `hosts` in one read when the store can (the re-evaluation of a
  // page of hosts); hosts without a posture, or unknown, are absent. The default asks GetHost
  // for each.
  virtual absl::StatusOr<std::map<std::string, StoredPosture>> CurrentPostures(
      const std::vector<std::string>& hosts) {
    std::map<std::string, StoredPosture> out;
    for (const std::string& host : hosts) {
      absl::StatusOr<std::optional<HostRecord>> record = GetHost(host);
      if (!record.ok()) return record.status();
      if (!record->has_value() || (*record)->posture_digest.empty()) continue;
      out[host] = {std::move((*record)->posture), std::move((*record)->posture_digest)};
    }
    return out;
  }
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_HOST_STORE_H_
