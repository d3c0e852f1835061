#include "collector/store/postgres/posture_rows.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "collector/store/postgres/sql.h"
#include "nlohmann/json.hpp"

namespace smbfleet::collector::pg {

using smbfleet::v1::Posture;

void SaveBenchmarks(pqxx::work& tx, int64_t host_id, const Posture& posture,
                    const std::string& received) {
  InsertBatch rows(tx,
                   "INSERT INTO host_benchmarks (host_id, measured_at, algorithm, "
                   "buffer_bytes, threads, bytes_per_second)",
                   "ON CONFLICT DO NOTHING");
  for (const auto& b : posture.benchmarks()) {
    const std::string measured = TimestampText(b.measured_at());
    rows.Add({Literal(host_id),
              Literal(tx, measured.empty() ? received : measured) + "::timestamptz",
              Literal(tx, smbfleet::v1::CryptoAlgorithm_Name(b.algorithm())),
              Literal(static_cast<int64_t>(b.buffer_bytes())),
              Literal(static_cast<int64_t>(b.threads())), Literal(b.bytes_per_second())});
  }
  rows.Flush();
}

void ReplaceSessions(pqxx::work& tx, int64_t host_id, const Posture& posture) {
  tx.exec_params("DELETE FROM host_sessions WHERE host_id = $1", host_id);
  if (posture.sessions_size() == 0) return;
  pqxx::stream_to sessions(
      tx, "host_sessions",
      std::vector<std::string>{"host_id", "session_id", "client_address", "client_name",
                               "user_name", "dialect", "signing", "encryption", "signing_algorithm",
                               "cipher", "shares"});
  for (const auto& s : posture.sessions()) {
    nlohmann::json shares = nlohmann::json::array();
    for (const auto& sc : s.shares()) shares.push_back(sc.name());
    sessions << std::make_tuple(host_id, s.session_id(), s.client_address(), s.client_name(),
                                s.user(), smbfleet::v1::Dialect_Name(s.dialect()),
                                smbfleet::v1::Protection_Name(s.signing()),
                                smbfleet::v1::Protection_Name(s.encryption()),
                                smbfleet::v1::CryptoAlgorithm_Name(s.signing_algorithm()),
                                smbfleet::v1::CryptoAlgorithm_Name(s.cipher()), shares.dump());
  }
  sessions.complete();
}

void ReplaceShares(pqxx::work& tx, int64_t host_id, const Posture& posture) {
  tx.exec_params("DELETE FROM host_shares WHERE host_id = $1", host_id);
  // A name reported twice keeps its first row and its last path, as row-by-row upserts did;
  // one multi-row upsert may not touch a row twice.
  std::map<std::string, std::pair<const smbfleet::v1::Share*, std::string>> by_name;
  std::vector<std::string> order;
  for (const auto& share : posture.shares()) {
    auto [it, inserted] = by_name.try_emplace(share.name(), &share, share.path());
    if (inserted) {
      order.push_back(share.name());
    } else {
      it->second.second = share.path();
    }
  }
  // The server's EncryptData goes on each share row: a share of an encrypting server is
  // encrypted (the overview's and share_encryption's counts, migration 0017).
  const std::string server_encrypts = Literal(
      posture.server().has_encrypt_data() ? std::optional<bool>(posture.server().encrypt_data())
                                          : std::nullopt);
  InsertBatch rows(tx,
                   "INSERT INTO host_shares (host_id, name, path, encrypt_data, "
                   "compress_data, classification, server_encrypt_data)",
                   "");
  for (const auto& name : order) {
    const auto& [share, path] = by_name[name];
    rows.Add({Literal(host_id), Literal(tx, name), Literal(tx, path),
              Literal(share->has_encrypt_data() ? std::optional<bool>(share->encrypt_data())
                                                : std::nullopt),
              Literal(share->has_compress_data() ? std::optional<bool>(share->compress_data())
                                                 : std::nullopt),
              Literal(tx, share->classification()), server_encrypts});
  }
  rows.Flush();
}

}  // namespace smbfleet::collector::pg
