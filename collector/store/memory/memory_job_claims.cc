#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/job_claims.h"

namespace smbfleet::collector {
namespace {

// Shared by the claims object and every claim it handed out, so that a claim may outlive it.
struct ClaimedJobs {
  absl::Mutex mu;
  std::set<std::string> held ABSL_GUARDED_BY(mu);
};

class LocalJobClaim : public JobClaim {
 public:
  LocalJobClaim(std::shared_ptr<ClaimedJobs> jobs, std::string job)
      : jobs_(std::move(jobs)), job_(std::move(job)) {}
  ~LocalJobClaim() override {
    absl::MutexLock lock(&jobs_->mu);
    jobs_->held.erase(job_);
  }

 private:
  std::shared_ptr<ClaimedJobs> jobs_;
  std::string job_;
};

class LocalJobClaims : public JobClaims {
 public:
  absl::StatusOr<std::unique_ptr<JobClaim>> TryClaim(const std::string& job) override {
    absl::MutexLock lock(&jobs_->mu);
    if (!jobs_->held.insert(job).second) return std::unique_ptr<JobClaim>();
    return std::unique_ptr<JobClaim>(std::make_unique<LocalJobClaim>(jobs_, job));
  }

 private:
  std::shared_ptr<ClaimedJobs> jobs_ = std::make_shared<ClaimedJobs>();
};

}  // namespace

std::unique_ptr<JobClaims> NewLocalJobClaims() { return std::make_unique<LocalJobClaims>(); }

}  // namespace smbfleet::collector
