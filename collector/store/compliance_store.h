#ifndef SMBFLEET_COLLECTOR_STORE_COMPLIANCE_STORE_H_
#define SMBFLEET_COLLECTOR_STORE_COMPLIANCE_STORE_H_

// Compliance history (migration 0002): policy versions, each host's current results, the
// status transitions behind "failing since", and waivers. The store only writes what it is
// given; transitions are computed by the report pipeline (collector/ingest/).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet::collector {

// One stored current result of a host: what transitions are computed against.
struct ResultStatus {
  std::string rule_id;
  std::string share;  // "" for host rules
  std::string policy_version;
  smbfleet::v1::ComplianceStatus status = smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED;
};

struct EvaluationWrite {
  std::string host;
  const smbfleet::v1::HostEvaluation* evaluation = nullptr;
  std::vector<smbfleet::v1::StatusTransition> transitions;
  // What the evaluation was computed from (see ingest/pipeline.h); stored with the host so
  // that an identical next report skips evaluation, on any replica and after a restart.
  std::string evaluation_key;
  // The key stored when the previous results were read. Another evaluation saved since (the
  // stored key differs) makes SaveEvaluation ABORTED: transitions must be computed again.
  std::string expected_key;
};

// A host's stored evaluation as one read gives it (StoredEvaluations): the key stored by its
// last SaveEvaluation and the current results that the next transitions are computed against.
struct StoredEvaluation {
  std::string evaluation_key;  // "" when never evaluated
  std::vector<ResultStatus> results;
};

// What a host's current evaluation stands on (EvaluationStates): its current posture's digest
// and the key stored by its last evaluation.
struct EvaluationState {
  std::string host;
  std::string posture_digest;  // hex, as HostRecord::posture_digest
  std::string evaluation_key;  // "" when never evaluated
};

// What GetFleetOverview aggregates over (AdminApi fills it from the request and the config).
struct OverviewQuery {
  uint32_t trend_days = 30;  // days of the trend, the last one being now's UTC day
  uint32_t top = 10;         // length of each top list
  absl::Time now;
  absl::Time stale_before;  // hosts last seen before this are stale
};

class ComplianceStore {
 public:
  virtual ~ComplianceStore() = default;

  // A policy version is registered and made the active one at collector start; results of
  // any other version stop counting.
  virtual absl::Status ActivatePolicy(const std::string& name, const std::string& version,
                                      const std::string& source) = 0;
  // Waivers in force now.
  virtual absl::StatusOr<std::vector<smbfleet::v1::Waiver>> ActiveWaivers() = 0;

  // The evaluation key stored by the host's last SaveEvaluation; "" when there is none.
  virtual absl::StatusOr<std::string> EvaluationKey(const std::string& host) = 0;
  // One page of the hosts that have a posture, by name, those after `after_host`: what the
  // re-evaluation of stored postures (ingest/reevaluate.h) checks for a key that is not the
  // one the current policy gives.
  virtual absl::StatusOr<std::vector<EvaluationState>> EvaluationStates(
      const std::string& after_host, uint32_t limit) {
    return absl::UnimplementedError("this compliance store does not list evaluation states");
  }
  virtual absl::StatusOr<std::vector<ResultStatus>> CurrentResults(
      const std::string& host, const std::string& policy_name) = 0;
  // In one transaction: appends the transitions, replaces the host's results of that policy,
  // records each share's classification and the evaluation key. NOT_FOUND for an unknown host,
  // ABORTED when write.expected_key is no longer the stored key.
  virtual absl::Status SaveEvaluation(const EvaluationWrite& write) = 0;

  // For the re-evaluation of a page of hosts (ingest/reevaluate.h), set-based:
  // The stored keys and current results (of `policy_name`) of `hosts`, in one read when the
  // store can, so that each key is the one its results were saved with. Hosts the store does
  // not know are absent. The default asks EvaluationKey and CurrentResults for each host.
  virtual absl::StatusOr<std::map<std::string, StoredEvaluation>> StoredEvaluations(
      const std::vector<std::string>& hosts, const std::string& policy_name) {
    std::map<std::string, StoredEvaluation> out;
    for (const std::string& host : hosts) {
      absl::StatusOr<std::string> key = EvaluationKey(host);
      if (!key.ok()) return key.status();
      absl::StatusOr<std::vector<ResultStatus>> results = CurrentResults(host, policy_name);
      if (!results.ok()) return results.status();
      out[host] = {*std::move(key), *std::move(results)};
    }
    return out;
  }
  // SaveEvaluation of each write (hosts distinct), in one transaction when the store can. The
  // answer has one status per write, in order: OK (saved), ABORTED (its expected_key is no
  // longer the stored key: nothing of that host written; compute its transitions again) or
  // NOT_FOUND (unknown host). An error of the whole call saved none of them; the default
  // saves them one by one, and its error may follow some that were saved.
  virtual absl::StatusOr<std::vector<absl::Status>> SaveEvaluations(
      const std::vector<EvaluationWrite>& writes) {
    std::vector<absl::Status> out;
    out.reserve(writes.size());
    for (const EvaluationWrite& w : writes) {
      absl::Status saved = SaveEvaluation(w);
      if (!saved.ok() && !absl::IsAborted(saved) && !absl::IsNotFound(saved)) return saved;
      out.push_back(std::move(saved));
    }
    return out;
  }

  virtual absl::StatusOr<smbfleet::v1::GetComplianceResponse> GetCompliance() = 0;
  // The fleet overview from the stored results, transitions and latest postures: everything
  // but drift (ChangeStore::DriftedHosts) and generated_at. Labels are the trusted ones
  // (host_labels); the trend counts each day's last status of every (host, rule, share) of the
  // active policy, as GetCompliance counts now.
  virtual absl::StatusOr<smbfleet::v1::GetFleetOverviewResponse> GetFleetOverview(
      const OverviewQuery& query) {
    return absl::UnimplementedError("this compliance store has no fleet overview");
  }
  virtual absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListFindings(
      const std::string& host, const std::string& rule_id, uint32_t limit) = 0;
  // What waivers hide: the WAIVED results of the active policy as findings, each with its
  // waiver_id (ListFindings include_waived). A backend without it answers UNIMPLEMENTED.
  virtual absl::StatusOr<std::vector<smbfleet::v1::Finding>> ListWaivedFindings(
      const std::string& host, const std::string& rule_id, uint32_t limit) {
    return absl::UnimplementedError("this compliance store does not list waived findings yet");
  }
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_STORE_COMPLIANCE_STORE_H_
