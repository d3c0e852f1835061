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
  if (posture.benchmarks_size() == 0) return;
  // One statement, the values as array parameters.
  std::vector<std::string> measured_at;
  std::vector<std::string> algorithm;
  std::vector<int64_t> buffer_bytes;
  std::vector<int64_t> threads;
  std::vector<double> bytes_per_second;
  for (const auto& b : posture.benchmarks()) {
    const std::string measured = TimestampText(b.measured_at());
    measured_at.push_back(measured.empty() ? received : measured);
    algorithm.push_back(smbfleet::v1::CryptoAlgorithm_Name(b.algorithm()));
    buffer_bytes.push_back(static_cast<int64_t>(b.buffer_bytes()));
    threads.push_back(static_cast<int64_t>(b.threads()));
    bytes_per_second.push_back(b.bytes_per_second());
  }
  tx.exec_params(
      "INSERT INTO host_benchmarks (host_id, measured_at, algorithm, buffer_bytes, threads, "
      "bytes_per_second) "
      "SELECT $1, u.measured_at, u.algorithm, u.buffer_bytes, u.threads, u.bytes_per_second "
      "FROM unnest($2::timestamptz[], $3::text[], $4::bigint[], $5::bigint[], $6::float8[]) "
      "AS u(measured_at, algorithm, buffer_bytes, threads, bytes_per_second) "
      "ON CONFLICT DO NOTHING",
      host_id, TextArray(measured_at), TextArray(algorithm), BigintArray(buffer_bytes),
      BigintArray(threads), DoubleArray(bytes_per_second));
}

void ReplaceSessions(pqxx::work& tx, const std::vector<HostPosture>& hosts) {
  if (hosts.empty()) return;
  std::vector<int64_t> ids;
  size_t sessions = 0;
  for (const auto& [id, posture] : hosts) {
    ids.push_back(id);
    sessions += static_cast<size_t>(posture->sessions_size());
  }
  tx.exec_params("DELETE FROM host_sessions WHERE host_id = ANY($1::bigint[])", BigintArray(ids));
  if (sessions == 0) return;
  pqxx::stream_to rows(
      tx, "host_sessions",
      std::vector<std::string>{"host_id", "session_id", "client_address", "client_name",
                               "user_name", "dialect", "signing", "encryption", "signing_algorithm",
                               "cipher", "shares"});
  for (const auto& [host_id, posture] : hosts) {
    for (const auto& s : posture->sessions()) {
      nlohmann::json shares = nlohmann::json::array();
      for (const auto& sc : s.shares()) shares.push_back(sc.name());
      rows << std::make_tuple(host_id, s.session_id(), s.client_address(), s.client_name(),
                              s.user(), smbfleet::v1::Dialect_Name(s.dialect()),
                              smbfleet::v1::Protection_Name(s.signing()),
                              smbfleet::v1::Protection_Name(s.encryption()),
                              smbfleet::v1::CryptoAlgorithm_Name(s.signing_algorithm()),
                              smbfleet::v1::CryptoAlgorithm_Name(s.cipher()), shares.dump());
    }
  }
  rows.complete();
}

void ReplaceShares(pqxx::work& tx, const std::vector<HostPosture>& hosts) {
  if (hosts.empty()) return;
  std::vector<int64_t> ids;
  for (const auto& host : hosts) ids.push_back(host.first);
  tx.exec_params("DELETE FROM host_shares WHERE host_id = ANY($1::bigint[])", BigintArray(ids));
  // One statement, the values as array parameters: the agent's share names and paths are never
  // in the statement's text.
  std::vector<int64_t> host_ids;
  std::vector<std::string> names;
  std::vector<std::string> paths;
  std::vector<std::optional<bool>> encrypt;
  std::vector<std::optional<bool>> compress;
  std::vector<std::string> classification;
  std::vector<std::optional<bool>> server_encrypts;
  for (const auto& [host_id, posture] : hosts) {
    // A name reported twice keeps its first row and its last path, as row-by-row upserts did;
    // one multi-row upsert may not touch a row twice.
    std::map<std::string, std::pair<const smbfleet::v1::Share*, std::string>> by_name;
    std::vector<std::string> order;
    for (const auto& share : posture->shares()) {
      auto [it, inserted] = by_name.try_emplace(share.name(), &share, share.path());
      if (inserted) {
        order.push_back(share.name());
      } else {
        it->second.second = share.path();
      }
    }
    // The server's EncryptData goes on each share row: a share of an encrypting server is
    // encrypted (the overview's and share_encryption's counts, migration 0017).
    const std::optional<bool> server_encrypt =
        posture->server().has_encrypt_data() ? std::optional<bool>(posture->server().encrypt_data())
                                             : std::nullopt;
    for (const auto& name : order) {
      const auto& [share, path] = by_name[name];
      host_ids.push_back(host_id);
      names.push_back(name);
      paths.push_back(path);
      encrypt.push_back(share->has_encrypt_data() ? std::optional<bool>(share->encrypt_data())
                                                  : std::nullopt);
      compress.push_back(share->has_compress_data() ? std::optional<bool>(share->compress_data())
                                                    : std::nullopt);
      classification.push_back(share->classification());
      server_encrypts.push_back(server_encrypt);
    }
  }
  if (names.empty()) return;
  tx.exec_params(
      "INSERT INTO host_shares (host_id, name, path, encrypt_data, compress_data, classification, "
      "server_encrypt_data) "
      "SELECT u.host_id, u.name, u.path, u.encrypt_data, u.compress_data, u.classification, "
      "u.server_encrypt_data "
      "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bool[], $5::bool[], $6::text[], "
      "$7::bool[]) WITH ORDINALITY AS u(host_id, name, path, encrypt_data, compress_data, "
      "classification, server_encrypt_data, i) ORDER BY u.i",
      BigintArray(host_ids), TextArray(names), TextArray(paths), NullableBoolArray(encrypt),
      NullableBoolArray(compress), TextArray(classification), NullableBoolArray(server_encrypts));
}

}  // namespace smbfleet::collector::pg
