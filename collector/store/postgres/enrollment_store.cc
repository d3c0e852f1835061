#include "collector/store/postgres/enrollment_store.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/store/postgres/sql.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;

constexpr char kTokenColumns[] = R"sql(
  id, encode(secret_sha256, 'hex') AS secret_sha256, labels::text AS labels, max_uses, uses_left,
  comment, allow_reenrollment, created_by, revoked_by,
  (EXTRACT(EPOCH FROM expires_at) * 1000000)::bigint AS expires_at,
  (EXTRACT(EPOCH FROM created_at) * 1000000)::bigint AS created_at,
  (EXTRACT(EPOCH FROM revoked_at) * 1000000)::bigint AS revoked_at
)sql";

constexpr char kCertColumns[] = R"sql(
  serial, fingerprint, host, COALESCE(enrollment_token_id, '') AS enrollment_token_id,
  (EXTRACT(EPOCH FROM not_before) * 1000000)::bigint AS not_before,
  (EXTRACT(EPOCH FROM not_after) * 1000000)::bigint AS not_after,
  (EXTRACT(EPOCH FROM issued_at) * 1000000)::bigint AS issued_at,
  (EXTRACT(EPOCH FROM revoked_at) * 1000000)::bigint AS revoked_at
)sql";

std::string LabelsJson(const google::protobuf::Map<std::string, std::string>& labels) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j.dump();
}

EnrollmentTokenRecord TokenFromRow(const pqxx::row& r) {
  EnrollmentTokenRecord out;
  v1::EnrollmentToken& t = out.token;
  t.set_id(r["id"].as<std::string>());
  auto labels = nlohmann::json::parse(r["labels"].as<std::string>(), nullptr, false);
  if (labels.is_object()) {
    for (auto& [k, v] : labels.items()) {
      if (v.is_string()) (*t.mutable_labels())[k] = v.get<std::string>();
    }
  }
  const auto max_uses = r["max_uses"].as<uint32_t>();
  t.set_max_uses(max_uses);
  t.set_uses(max_uses - r["uses_left"].as<uint32_t>());
  t.set_comment(r["comment"].as<std::string>());
  t.set_allow_reenrollment(r["allow_reenrollment"].as<bool>());
  t.set_created_by(r["created_by"].as<std::string>());
  t.set_revoked_by(r["revoked_by"].as<std::string>());
  pg::SetTimestampFromMicros(r["expires_at"], t.mutable_expires_at());
  pg::SetTimestampFromMicros(r["created_at"], t.mutable_created_at());
  if (!r["revoked_at"].is_null())
    pg::SetTimestampFromMicros(r["revoked_at"], t.mutable_revoked_at());
  out.secret_sha256 = absl::HexStringToBytes(r["secret_sha256"].as<std::string>());
  return out;
}

v1::IssuedCertificate CertFromRow(const pqxx::row& r) {
  v1::IssuedCertificate c;
  c.set_serial(r["serial"].as<std::string>());
  c.set_fingerprint(r["fingerprint"].as<std::string>());
  c.set_host(r["host"].as<std::string>());
  c.set_enrollment_token_id(r["enrollment_token_id"].as<std::string>());
  pg::SetTimestampFromMicros(r["not_before"], c.mutable_not_before());
  pg::SetTimestampFromMicros(r["not_after"], c.mutable_not_after());
  pg::SetTimestampFromMicros(r["issued_at"], c.mutable_issued_at());
  if (!r["revoked_at"].is_null())
    pg::SetTimestampFromMicros(r["revoked_at"], c.mutable_revoked_at());
  return c;
}

absl::Status NoToken(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("no enrollment token '", id.substr(0, 64), "'"));
}

class PgEnrollmentStore : public EnrollmentStore {
 public:
  explicit PgEnrollmentStore(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

  absl::Status CreateToken(const v1::EnrollmentToken& token,
                           const std::string& secret_sha256) override {
    return pool_->Run<pqxx::work>("creating an enrollment token", [&](pqxx::work& tx) {
      pqxx::result r = tx.exec_params(
          "INSERT INTO enrollment_tokens (id, secret_sha256, labels, max_uses, uses_left, "
          "expires_at, comment, allow_reenrollment, created_by, created_at) "
          "VALUES ($1, decode($2, 'hex'), $3::jsonb, $4, $4, $5::timestamptz, $6, $7, $8, "
          "COALESCE(NULLIF($9, '')::timestamptz, now())) ON CONFLICT (id) DO NOTHING",
          token.id(), absl::BytesToHexString(secret_sha256), LabelsJson(token.labels()),
          static_cast<int64_t>(token.max_uses()), pg::TimestampText(token.expires_at()),
          token.comment(), token.allow_reenrollment(), token.created_by(),
          pg::TimestampText(token.created_at()));
      if (r.affected_rows() == 0) {
        return absl::AlreadyExistsError(
            absl::StrCat("enrollment token ", token.id(), " exists already"));
      }
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::optional<EnrollmentTokenRecord>> GetToken(const std::string& id) override {
    return pool_->Run<pqxx::read_transaction>(
        "reading an enrollment token",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::optional<EnrollmentTokenRecord>> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("SELECT ", kTokenColumns, " FROM enrollment_tokens WHERE id = $1"), id);
          if (r.empty()) return std::optional<EnrollmentTokenRecord>();
          return std::optional<EnrollmentTokenRecord>(TokenFromRow(r[0]));
        });
  }

  absl::StatusOr<std::vector<v1::EnrollmentToken>> ListTokens(bool include_inactive,
                                                              absl::Time now) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing enrollment tokens",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::EnrollmentToken>> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("SELECT ", kTokenColumns, " FROM enrollment_tokens WHERE $1 OR ",
                           "(revoked_at IS NULL AND uses_left > 0 AND expires_at > "
                           "$2::timestamptz) ORDER BY created_at DESC, id"),
              include_inactive, pg::Rfc3339(now));
          std::vector<v1::EnrollmentToken> out;
          for (const auto& row : r) out.push_back(TokenFromRow(row).token);
          return out;
        });
  }

  absl::StatusOr<v1::EnrollmentToken> RevokeToken(const std::string& id,
                                                  const std::string& revoked_by,
                                                  const std::string& reason,
                                                  absl::Time at) override {
    return pool_->Run<pqxx::work>(
        "revoking an enrollment token", [&](pqxx::work& tx) -> absl::StatusOr<v1::EnrollmentToken> {
          pqxx::result current =
              tx.exec_params(absl::StrCat("SELECT ", kTokenColumns,
                                          " FROM enrollment_tokens WHERE id = $1 FOR UPDATE"),
                             id);
          if (current.empty()) return NoToken(id);
          v1::EnrollmentToken token = TokenFromRow(current[0]).token;
          if (token.has_revoked_at()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "enrollment token ", id, " was revoked by ", token.revoked_by(), " already"));
          }
          pqxx::result r = tx.exec_params(
              absl::StrCat("UPDATE enrollment_tokens SET revoked_by = $2, revoked_at = "
                           "$3::timestamptz, revoke_reason = $4 WHERE id = $1 RETURNING ",
                           kTokenColumns),
              id, revoked_by, pg::Rfc3339(at), reason);
          tx.commit();
          return TokenFromRow(r[0]).token;
        });
  }

  absl::StatusOr<v1::EnrollmentToken> TakeUse(const std::string& id, absl::Time now) override {
    return pool_->Run<pqxx::work>(
        "using an enrollment token", [&](pqxx::work& tx) -> absl::StatusOr<v1::EnrollmentToken> {
          // One statement: the row lock makes racing callers queue, and each re-checks
          // uses_left > 0 after the one before it committed.
          pqxx::result r = tx.exec_params(
              absl::StrCat("UPDATE enrollment_tokens SET uses_left = uses_left - 1 WHERE id = $1 "
                           "AND revoked_at IS NULL AND uses_left > 0 AND expires_at > "
                           "$2::timestamptz RETURNING ",
                           kTokenColumns),
              id, pg::Rfc3339(now));
          if (!r.empty()) {
            tx.commit();
            return TokenFromRow(r[0]).token;
          }
          pqxx::result current = tx.exec_params(
              absl::StrCat("SELECT ", kTokenColumns, " FROM enrollment_tokens WHERE id = $1"), id);
          if (current.empty()) return NoToken(id);
          const v1::EnrollmentToken t = TokenFromRow(current[0]).token;
          const char* why = t.has_revoked_at()         ? "revoked"
                            : t.uses() >= t.max_uses() ? "used up"
                                                       : "expired";
          return absl::FailedPreconditionError(absl::StrCat("enrollment token ", id, " is ", why));
        });
  }

  absl::Status RecordCertificate(const v1::IssuedCertificate& cert) override {
    return pool_->Run<pqxx::work>("recording an issued certificate", [&](pqxx::work& tx) {
      pqxx::result r = tx.exec_params(
          "INSERT INTO issued_certificates (serial, fingerprint, host, not_before, not_after, "
          "enrollment_token_id, issued_at) VALUES ($1, $2, $3, $4::timestamptz, $5::timestamptz, "
          "NULLIF($6, ''), COALESCE(NULLIF($7, '')::timestamptz, now())) ON CONFLICT DO NOTHING",
          cert.serial(), cert.fingerprint(), cert.host(), pg::TimestampText(cert.not_before()),
          pg::TimestampText(cert.not_after()), cert.enrollment_token_id(),
          pg::TimestampText(cert.issued_at()));
      if (r.affected_rows() == 0) {
        return absl::AlreadyExistsError(
            absl::StrCat("certificate ", cert.serial(), " is recorded already"));
      }
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::vector<v1::IssuedCertificate>> ListCertificates(const std::string& host,
                                                                      bool include_inactive,
                                                                      absl::Time now) override {
    return pool_->Run<pqxx::read_transaction>(
        "listing issued certificates",
        [&](pqxx::read_transaction& tx) -> absl::StatusOr<std::vector<v1::IssuedCertificate>> {
          pqxx::result r = tx.exec_params(
              absl::StrCat("SELECT ", kCertColumns,
                           " FROM issued_certificates WHERE ($1 = '' OR host = $1) AND ($2 OR "
                           "(revoked_at IS NULL AND not_after > $3::timestamptz)) "
                           "ORDER BY host, issued_at, serial"),
              host, include_inactive, pg::Rfc3339(now));
          std::vector<v1::IssuedCertificate> out;
          for (const auto& row : r) out.push_back(CertFromRow(row));
          return out;
        });
  }

  absl::StatusOr<HostLabels> GetHostLabels(const std::string& host) override {
    return pool_->Run<pqxx::read_transaction>(
        "reading host labels", [&](pqxx::read_transaction& tx) -> absl::StatusOr<HostLabels> {
          pqxx::result r =
              tx.exec_params("SELECT key, value FROM host_labels WHERE host = $1", host);
          HostLabels out;
          for (const auto& row : r) out[row[0].as<std::string>()] = row[1].as<std::string>();
          return out;
        });
  }

  absl::StatusOr<std::map<std::string, HostLabels>> GetHostLabelsOf(
      const std::vector<std::string>& hosts) override {
    // One statement (a batch of digest-only reports reads its hosts' labels once): no
    // BEGIN/COMMIT.
    return pool_->RunStatement(
        DatabaseOperation::kRead, "reading host labels",
        [&](pqxx::nontransaction& tx) -> absl::StatusOr<std::map<std::string, HostLabels>> {
          pqxx::result r = tx.exec_params(
              "SELECT host, key, value FROM host_labels WHERE host = ANY($1::text[])",
              pg::TextArray(hosts));
          std::map<std::string, HostLabels> out;
          for (const std::string& host : hosts) out[host];
          for (const auto& row : r) {
            out[row[0].as<std::string>()][row[1].as<std::string>()] = row[2].as<std::string>();
          }
          return out;
        });
  }

  absl::Status SetHostLabels(const std::string& host, const HostLabels& labels,
                             const std::string& set_by, absl::Time at) override {
    return pool_->Run<pqxx::work>("setting host labels", [&](pqxx::work& tx) {
      tx.exec_params("DELETE FROM host_labels WHERE host = $1", host);
      for (const auto& [k, v] : labels) {
        tx.exec_params(
            "INSERT INTO host_labels (host, key, value, set_by, set_at) "
            "VALUES ($1, $2, $3, $4, $5::timestamptz)",
            host, k, v, set_by, pg::Rfc3339(at));
      }
      tx.commit();
      return absl::OkStatus();
    });
  }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

std::unique_ptr<EnrollmentStore> NewPgEnrollmentStore(std::shared_ptr<ConnectionPool> pool) {
  return std::make_unique<PgEnrollmentStore>(std::move(pool));
}

}  // namespace smbfleet::collector
