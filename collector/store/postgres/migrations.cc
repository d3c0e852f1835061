#include "collector/store/postgres/migrations.h"

#include <openssl/evp.h>

#include <pqxx/pqxx>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/store/postgres/dsn.h"

namespace smbfleet::collector {
namespace {

constexpr char kMigrationLockKey[] = "smbfleet.migrations";

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), len));
}

// Applies what is missing; the caller holds the advisory lock.
absl::Status ApplyLocked(pqxx::connection& conn, const std::vector<Migration>& migrations) {
  {
    pqxx::work tx(conn);
    tx.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, "
        "checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
    tx.commit();
  }
  for (const auto& m : migrations) {
    const std::string checksum = Sha256Hex(m.sql);
    pqxx::work tx(conn);
    pqxx::result existing =
        tx.exec_params("SELECT checksum FROM schema_migrations WHERE version = $1", m.version);
    if (!existing.empty()) {
      if (existing[0]["checksum"].as<std::string>() != checksum) {
        return absl::FailedPreconditionError(
            absl::StrCat("migration ", m.version,
                         " was changed after it was applied; add a new migration instead"));
      }
      continue;
    }
    tx.exec(m.sql);
    tx.exec_params("INSERT INTO schema_migrations (version, checksum) VALUES ($1, $2)", m.version,
                   checksum);
    tx.commit();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyMigrations(const std::string& dsn, const std::vector<Migration>& migrations) {
  try {
    pqxx::connection conn(dsn);
    {
      pqxx::nontransaction lock(conn);
      lock.exec_params("SELECT pg_advisory_lock(hashtext($1))", kMigrationLockKey);
    }
    absl::Status result;
    try {
      result = ApplyLocked(conn, migrations);
    } catch (...) {
      result = MapPgException(dsn, "applying migrations");
    }
    pqxx::nontransaction unlock(conn);
    unlock.exec_params("SELECT pg_advisory_unlock(hashtext($1))", kMigrationLockKey);
    return result;
  } catch (...) {
    return MapPgException(dsn, "applying migrations");
  }
}

absl::Status CheckMigrations(const std::string& dsn, const std::vector<Migration>& migrations) {
  try {
    pqxx::connection conn(dsn);
    pqxx::nontransaction tx(conn);
    pqxx::result applied = tx.exec("SELECT version FROM schema_migrations");
    absl::flat_hash_set<std::string> versions;
    for (const auto& row : applied) versions.insert(row[0].as<std::string>());
    for (const Migration& m : migrations) {
      if (!versions.contains(m.version)) {
        return absl::FailedPreconditionError(
            absl::StrCat("database: migration ", m.version, " is not applied"));
      }
    }
    return absl::OkStatus();
  } catch (...) {
    return MapPgException(dsn, "checking migrations");
  }
}

}  // namespace smbfleet::collector
