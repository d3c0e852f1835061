#include "collector/store/postgres/identity_store.h"

#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "collector/store/postgres/sql.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

#define SMBFLEET_MICROS(col) "(EXTRACT(EPOCH FROM " col ") * 1000000)::bigint AS " col

constexpr char kTokenColumns[] =
    " id, name, array_to_string(roles, ',') AS roles, encode(secret_sha256, 'hex') AS secret, "
    "created_by, " SMBFLEET_MICROS("created_at") ", " SMBFLEET_MICROS(
        "expires_at") ", revoked_by, " SMBFLEET_MICROS("revoked_at") " ";

constexpr char kRevocationColumns[] =
    " serial, fingerprint, host, reason, revoked_by, " SMBFLEET_MICROS("revoked_at") " ";

#undef SMBFLEET_MICROS

StoredApiToken TokenFromRow(const pqxx::row& r) {
  StoredApiToken s;
  v1::ApiToken& t = s.token;
  t.set_id(r["id"].as<std::string>());
  t.set_name(r["name"].as<std::string>());
  for (absl::string_view role :
       absl::StrSplit(r["roles"].as<std::string>(), ',', absl::SkipEmpty())) {
    t.add_roles(std::string(role));
  }
  s.secret_sha256 = absl::HexStringToBytes(r["secret"].as<std::string>());
  t.set_created_by(r["created_by"].as<std::string>());
  pg::SetTimestampFromMicros(r["created_at"], t.mutable_created_at());
  pg::SetTimestampFromMicros(r["expires_at"], t.mutable_expires_at());
  t.set_revoked_by(r["revoked_by"].as<std::string>());
  if (!r["revoked_at"].is_null())
    pg::SetTimestampFromMicros(r["revoked_at"], t.mutable_revoked_at());
  return s;
}

v1::Revocation RevocationFromRow(const pqxx::row& r) {
  v1::Revocation v;
  v.set_serial(r["serial"].as<std::string>());
  v.set_fingerprint(r["fingerprint"].as<std::string>());
  v.set_host(r["host"].as<std::string>());
  v.set_reason(r["reason"].as<std::string>());
  v.set_revoked_by(r["revoked_by"].as<std::string>());
  pg::SetTimestampFromMicros(r["revoked_at"], v.mutable_revoked_at());
  return v;
}

class PgIdentityStore : public IdentityStore {
 public:
  explicit PgIdentityStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::Status AddApiToken(const StoredApiToken& s) override {
    return pool_->Run<pqxx::work>("storing an api token", [&](pqxx::work& tx) {
      const v1::ApiToken& t = s.token;
      pqxx::result r = tx.exec_params(
          "INSERT INTO api_tokens (id, name, roles, secret_sha256, created_by, created_at, "
          "expires_at) VALUES ($1, $2, string_to_array(NULLIF($3, ''), ','), decode($4, 'hex'), "
          "$5, COALESCE(NULLIF($6, '')::timestamptz, now()), $7::timestamptz) "
          "ON CONFLICT (id) DO NOTHING",
          t.id(), t.name(), absl::StrJoin(t.roles(), ","), absl::BytesToHexString(s.secret_sha256),
          t.created_by(), pg::TimestampText(t.created_at()), pg::TimestampText(t.expires_at()));
      if (r.affected_rows() == 0) {
        return absl::AlreadyExistsError(absl::StrCat("api token ", t.id(), " exists"));
      }
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::optional<StoredApiToken>> GetApiToken(const std::string& id) override {
    return pool_->Run<pqxx::read_transaction>(
        "reading an api token",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<StoredApiToken>> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("SELECT", kTokenColumns, "FROM api_tokens WHERE id = $1"), id);
          if (r.empty()) return std::optional<StoredApiToken>();
          return std::optional<StoredApiToken>(TokenFromRow(r[0]));
        });
  }

  absl::StatusOr<std::vector<v1::ApiToken>> ListApiTokens(bool include_inactive,
                                                          absl::Time now) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing api tokens",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::ApiToken>> {
          pqxx::result r =
              tx.exec_params(absl::StrCat("SELECT", kTokenColumns, "FROM api_tokens WHERE $1 OR ",
                                          "(revoked_at IS NULL AND expires_at > $2::timestamptz) ",
                                          "ORDER BY created_at, id"),
                             include_inactive, pg::Rfc3339(now));
          std::vector<v1::ApiToken> out;
          for (const auto& row : r) out.push_back(TokenFromRow(row).token);
          return out;
        });
  }

  absl::StatusOr<v1::ApiToken> RevokeApiToken(const std::string& id, const std::string& revoked_by,
                                              const std::string& reason, absl::Time at) override {
    return pool_->Run<pqxx::work>(
        "revoking an api token", [&](pqxx::work& tx) -> absl::StatusOr<v1::ApiToken> {
          pqxx::result current = tx.exec_params(
              absl::StrCat("SELECT", kTokenColumns, "FROM api_tokens WHERE id = $1 FOR UPDATE"),
              id);
          if (current.empty()) {
            return absl::NotFoundError(absl::StrCat("no api token '", id.substr(0, 64), "'"));
          }
          StoredApiToken token = TokenFromRow(current[0]);
          if (token.token.has_revoked_at()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "api token ", id, " was revoked by ", token.token.revoked_by(), " already"));
          }
          pqxx::result r = tx.exec_params(
              absl::StrCat("UPDATE api_tokens SET revoked_by = $2, revoked_at = $3::timestamptz, "
                           "revoke_reason = $4 WHERE id = $1 RETURNING",
                           kTokenColumns),
              id, revoked_by, pg::Rfc3339(at), reason);
          tx.commit();
          return TokenFromRow(r[0]).token;
        });
  }

  absl::StatusOr<v1::Revocation> AddRevocation(const v1::Revocation& v) override {
    return pool_->Run<pqxx::work>(
        "storing a certificate revocation", [&](pqxx::work& tx) -> absl::StatusOr<v1::Revocation> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("INSERT INTO certificate_revocations (serial, fingerprint, host, "
                           "reason, revoked_by, revoked_at) VALUES ($1, $2, $3, $4, $5, "
                           "COALESCE(NULLIF($6, '')::timestamptz, now())) "
                           "ON CONFLICT DO NOTHING RETURNING",
                           kRevocationColumns),
              v.serial(), v.fingerprint(), v.host(), v.reason(), v.revoked_by(),
              pg::TimestampText(v.revoked_at()));
          if (r.empty()) {
            if (v.serial().empty() && v.fingerprint().empty()) {
              return absl::AlreadyExistsError(
                  absl::StrCat("host ", v.host(), " is revoked already"));
            }
            return absl::AlreadyExistsError(
                absl::StrCat("certificate ", v.serial().empty() ? v.fingerprint() : v.serial(),
                             " is revoked already"));
          }
          // Delivered to every listening replica when (and only if) this commits.
          tx.exec_params("SELECT pg_notify($1, '')", std::string(kRevocationChannel));
          tx.commit();
          return RevocationFromRow(r[0]);
        });
  }

  absl::StatusOr<std::vector<v1::Revocation>> ListRevocations() override {
    return pool_->Run<pqxx::read_transaction>(
        "listing certificate revocations",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::Revocation>> {
          pqxx::result r = tx.exec(absl::StrCat("SELECT", kRevocationColumns,
                                                "FROM certificate_revocations ORDER BY id"));
          std::vector<v1::Revocation> out;
          for (const auto& row : r) out.push_back(RevocationFromRow(row));
          return out;
        });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<IdentityStore> NewPgIdentityStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgIdentityStore>(std::move(pool));
}

}  // namespace smbfleet::collector
