#include "collector/store/postgres/job_claims.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "collector/store/postgres/dsn.h"

namespace smbfleet::collector {
namespace {

// The advisory lock's key space is shared with the migrations' lock (hashtext of another name).
constexpr char kLockPrefix[] = "smbfleet.job.";

class PgJobClaim : public JobClaim {
 public:
  PgJobClaim(std::unique_ptr<pqxx::connection> conn, std::string key)
      : conn_(std::move(conn)), key_(std::move(key)) {}
  // Unlocked before the session closes: the server notices a closed connection a moment later,
  // and another process claiming right after must find the job free. Should the unlock fail,
  // closing the session releases the lock all the same.
  ~PgJobClaim() override {
    try {
      pqxx::nontransaction tx(*conn_);
      tx.exec_params("SELECT pg_advisory_unlock(hashtext($1))", key_);
    } catch (...) {
    }
  }

 private:
  std::unique_ptr<pqxx::connection> conn_;
  std::string key_;
};

class PgJobClaims : public JobClaims {
 public:
  explicit PgJobClaims(std::string dsn) : dsn_(std::move(dsn)) {}

  absl::StatusOr<std::unique_ptr<JobClaim>> TryClaim(const std::string& job) override {
    try {
      auto conn = std::make_unique<pqxx::connection>(dsn_);
      const std::string key = absl::StrCat(kLockPrefix, job);
      bool claimed = false;
      {
        pqxx::nontransaction tx(*conn);
        claimed = tx.exec_params1("SELECT pg_try_advisory_lock(hashtext($1))", key)[0].as<bool>();
      }
      if (!claimed) return std::unique_ptr<JobClaim>();
      return std::unique_ptr<JobClaim>(std::make_unique<PgJobClaim>(std::move(conn), key));
    } catch (...) {
      return MapPgException(dsn_, absl::StrCat("claiming job ", job));
    }
  }

 private:
  std::string dsn_;
};

}  // namespace

std::unique_ptr<JobClaims> NewPgJobClaims(const std::string& dsn) {
  return std::make_unique<PgJobClaims>(dsn);
}

}  // namespace smbfleet::collector
