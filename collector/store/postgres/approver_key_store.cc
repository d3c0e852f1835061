#include "collector/store/postgres/approver_key_store.h"

#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/store/postgres/sql.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

constexpr char kColumns[] = R"sql(
  key_id, name, encode(public_key, 'hex') AS public_key, added_by,
  (EXTRACT(EPOCH FROM added_at) * 1000000)::bigint AS added_at, revoked_by,
  (EXTRACT(EPOCH FROM revoked_at) * 1000000)::bigint AS revoked_at
)sql";

v1::ApproverKey KeyFromRow(const pqxx::row& r) {
  v1::ApproverKey k;
  k.set_key_id(r["key_id"].as<std::string>());
  k.set_name(r["name"].as<std::string>());
  k.set_public_key(absl::HexStringToBytes(r["public_key"].as<std::string>()));
  k.set_added_by(r["added_by"].as<std::string>());
  if (!r["added_at"].is_null()) pg::SetTimestampFromMicros(r["added_at"], k.mutable_added_at());
  k.set_revoked_by(r["revoked_by"].as<std::string>());
  if (!r["revoked_at"].is_null())
    pg::SetTimestampFromMicros(r["revoked_at"], k.mutable_revoked_at());
  return k;
}

class PgApproverKeyStore : public ApproverKeyStore {
 public:
  explicit PgApproverKeyStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::Status AddKey(const v1::ApproverKey& key) override {
    return pool_->Run<pqxx::work>("registering an approver key", [&](pqxx::work& tx) {
      const std::string added_at = pg::TimestampText(key.added_at());
      pqxx::result r = tx.exec_params(
          "INSERT INTO approver_keys (key_id, name, public_key, added_by, added_at) "
          "VALUES ($1, $2, decode($3, 'hex'), $4, COALESCE(NULLIF($5, '')::timestamptz, now())) "
          "ON CONFLICT (key_id) DO NOTHING",
          key.key_id(), key.name(), absl::BytesToHexString(key.public_key()), key.added_by(),
          added_at);
      if (r.affected_rows() == 0) {
        return absl::AlreadyExistsError(
            absl::StrCat("approver key ", key.key_id(), " is registered already"));
      }
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::optional<v1::ApproverKey>> GetKey(const std::string& key_id) override {
    return pool_->Run<pqxx::read_transaction>(
        "reading an approver key",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<v1::ApproverKey>> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("SELECT ", kColumns, " FROM approver_keys WHERE key_id = $1"), key_id);
          if (r.empty()) return std::optional<v1::ApproverKey>();
          return std::optional<v1::ApproverKey>(KeyFromRow(r[0]));
        });
  }

  absl::StatusOr<std::vector<v1::ApproverKey>> ListKeys(bool include_revoked) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing approver keys",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::ApproverKey>> {
          pqxx::result r = tx.exec(absl::StrCat("SELECT ", kColumns, " FROM approver_keys",
                                                include_revoked ? "" : " WHERE revoked_at IS NULL",
                                                " ORDER BY name, added_at, key_id"));
          std::vector<v1::ApproverKey> out;
          for (const auto& row : r) out.push_back(KeyFromRow(row));
          return out;
        });
  }

  absl::StatusOr<v1::ApproverKey> RevokeKey(const std::string& key_id,
                                            const std::string& revoked_by,
                                            const std::string& reason, absl::Time at) override {
    return pool_->Run<pqxx::work>(
        "revoking an approver key", [&](pqxx::work& tx) -> absl::StatusOr<v1::ApproverKey> {
          pqxx::result current = tx.exec_params(
              absl::StrCat("SELECT ", kColumns, " FROM approver_keys WHERE key_id = $1 FOR UPDATE"),
              key_id);
          if (current.empty()) {
            return absl::NotFoundError(
                absl::StrCat("no approver key '", key_id.substr(0, 64), "'"));
          }
          v1::ApproverKey key = KeyFromRow(current[0]);
          if (key.has_revoked_at()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "approver key ", key_id, " was revoked by ", key.revoked_by(), " already"));
          }
          pqxx::result r = tx.exec_params(
              absl::StrCat(
                  "UPDATE approver_keys SET revoked_by = $2, revoked_at = $3::timestamptz, "
                  "revoke_reason = $4 WHERE key_id = $1 RETURNING ",
                  kColumns),
              key_id, revoked_by, pg::Rfc3339(at), reason);
          tx.commit();
          return KeyFromRow(r[0]);
        });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<ApproverKeyStore> NewPgApproverKeyStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgApproverKeyStore>(std::move(pool));
}

}  // namespace smbfleet::collector
