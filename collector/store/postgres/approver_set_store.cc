#include "collector/store/postgres/approver_set_store.h"

#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::SignedApproverSet;

class PgApproverSetStore : public ApproverSetStore {
 public:
  explicit PgApproverSetStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::StatusOr<std::optional<SignedApproverSet>> Latest() override {
    return pool_->Run<pqxx::read_transaction>(
        "reading the latest approver set",
        [](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<SignedApproverSet>> {
          pqxx::result r =
              tx.exec("SELECT serial, signed_set FROM approver_sets ORDER BY serial DESC LIMIT 1");
          if (r.empty()) return std::optional<SignedApproverSet>();
          std::string bytes;
          SignedApproverSet set;
          if (!absl::Base64Unescape(r[0]["signed_set"].as<std::string>(), &bytes) ||
              !set.ParseFromString(bytes)) {
            return absl::DataLossError(absl::StrCat("approver_sets: serial ",
                                                    r[0]["serial"].as<std::string>(),
                                                    " is not a base64 SignedApproverSet"));
          }
          return std::optional<SignedApproverSet>(std::move(set));
        });
  }

  absl::Status Publish(const SignedApproverSet& set, uint64_t serial,
                       const std::string& published_by) override {
    return pool_->Run<pqxx::work>("publishing an approver set", [&](pqxx::work& tx) {
      // One publisher at a time, so that "greater than the latest" holds across replicas.
      tx.exec("LOCK TABLE approver_sets IN SHARE ROW EXCLUSIVE MODE");
      pqxx::result max = tx.exec("SELECT COALESCE(max(serial), 0) AS serial FROM approver_sets");
      const auto latest = max[0]["serial"].as<int64_t>();
      if (static_cast<int64_t>(serial) <= latest) {
        return absl::FailedPreconditionError(absl::StrCat("approver set serial ", serial,
                                                          " is not greater than the published ",
                                                          latest, "; agents would refuse it"));
      }
      tx.exec_params(
          "INSERT INTO approver_sets (serial, signed_set, root_key_id, published_by) "
          "VALUES ($1, $2, $3, $4)",
          static_cast<int64_t>(serial), absl::Base64Escape(set.SerializeAsString()),
          set.root_key_id(), published_by);
      tx.commit();
      return absl::OkStatus();
    });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<ApproverSetStore> NewPgApproverSetStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgApproverSetStore>(std::move(pool));
}

}  // namespace smbfleet::collector
