#include "agent/platform/samba/smbstatus_parser.h"

#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "agent/platform/samba/samba_names.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::samba {
namespace {

using nlohmann::json;
using smbfleet::v1::OpenFile;
using smbfleet::v1::Protection;
using smbfleet::v1::Session;
using smbfleet::v1::ShareConnection;

constexpr size_t kMaxSmbStatusBytes = 64 << 20;

absl::Status Malformed(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("smbstatus --json: ", where, ": ", what));
}

// smbstatus prints ids as strings but counters as numbers; accept either.
std::string Str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return "";
}

const json* Obj(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return nullptr;
  return &*it;
}

struct Crypto {
  Protection degree = v1::PROTECTION_UNSPECIFIED;
  std::optional<v1::CryptoAlgorithm> algorithm;
};

Crypto ReadCrypto(const json& parent, const char* key) {
  Crypto c;
  if (const json* o = Obj(parent, key)) {
    c.degree = ProtectionFromDegree(Str(*o, "degree"));
    c.algorithm = CryptoFromSamba(Str(*o, "cipher"));
  }
  return c;
}

// "2026-12-02T15:24:53.374359+00:00" (tcons) or "...+0000" (top level).
bool ParseTimestamp(const std::string& text, google::protobuf::Timestamp* out) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%E*S%Ez", text, &t, &err) &&
      !absl::ParseTime("%Y-%m-%dT%H:%M:%E*S%z", text, &t, &err)) {
    return false;
  }
  int64_t micros = absl::ToUnixMicros(t);
  out->set_seconds(micros / 1000000);
  out->set_nanos(static_cast<int32_t>((micros % 1000000) * 1000));
  return true;
}

// "ipv4:127.0.0.1:46282" -> "127.0.0.1"; "ipv6:::1:445" -> "::1". Anything else unchanged.
std::string AddressFromHostname(const std::string& hostname) {
  absl::string_view h = hostname;
  if (!absl::ConsumePrefix(&h, "ipv4:") && !absl::ConsumePrefix(&h, "ipv6:")) return hostname;
  size_t colon = h.rfind(':');
  if (colon == absl::string_view::npos) return std::string(h);
  uint32_t port;
  if (!absl::SimpleAtoi(h.substr(colon + 1), &port)) return std::string(h);
  absl::string_view addr = h.substr(0, colon);
  if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']') {
    addr = addr.substr(1, addr.size() - 2);
  }
  return std::string(addr);
}

// "ipv4:127.0.0.1:46282" -> 46282; 0 when the hostname carries no port.
uint32_t PortFromHostname(const std::string& hostname) {
  absl::string_view h = hostname;
  if (!absl::ConsumePrefix(&h, "ipv4:") && !absl::ConsumePrefix(&h, "ipv6:")) return 0;
  size_t colon = h.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(h.substr(colon + 1), &port) ||
      port > 65535) {
    return 0;
  }
  return port;
}

// Weakest-of summary over a session's tree connects.
Protection Summarise(Protection acc, Protection next, bool first) {
  if (first) return next;
  if (acc == next) return acc;
  if (acc == v1::PROTECTION_UNSPECIFIED || next == v1::PROTECTION_UNSPECIFIED) {
    return v1::PROTECTION_UNSPECIFIED;
  }
  return v1::PROTECTION_PARTIAL;
}

struct SessionKey {
  std::string pid;
  std::string uid;
};

}  // namespace

absl::StatusOr<SmbStatus> ParseSmbStatusJson(
    absl::string_view text, const std::map<std::string, std::string>& share_paths) {
  if (text.size() > kMaxSmbStatusBytes) {
    return Malformed("input", absl::StrCat(text.size(), " bytes, limit ", kMaxSmbStatusBytes));
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Malformed("input", "not valid JSON");
  if (!doc.is_object()) return Malformed("input", "top level is not an object");

  SmbStatus out;
  out.version = Str(doc, "version");

  for (const char* section : {"sessions", "tcons", "open_files"}) {
    auto it = doc.find(section);
    if (it != doc.end() && !it->is_object()) {
      return Malformed(section, "not an object");
    }
  }

  // Sessions, keyed by session id for the join with tcons.
  std::map<std::string, size_t> by_id;
  std::map<std::string, SessionKey> keys;
  std::map<std::string, std::pair<Crypto, Crypto>> session_crypto;  // id -> (signing, encryption)
  if (const json* sessions = Obj(doc, "sessions")) {
    for (const auto& [key, s] : sessions->items()) {
      if (!s.is_object()) return Malformed(absl::StrCat("sessions.", key), "not an object");
      Session session;
      std::string id = Str(s, "session_id");
      if (id.empty()) id = key;
      session.set_session_id(id);
      std::string hostname = Str(s, "hostname");
      session.set_client_address(AddressFromHostname(hostname));
      session.set_client_port(PortFromHostname(hostname));
      session.set_client_name(Str(s, "remote_machine"));
      session.set_user(Str(s, "username"));
      std::string dialect = Str(s, "session_dialect");
      session.set_dialect_raw(dialect);
      session.set_dialect(DialectFromSamba(dialect));
      Crypto signing = ReadCrypto(s, "signing");
      Crypto encryption = ReadCrypto(s, "encryption");
      session.set_signing(signing.degree);
      session.set_encryption(encryption.degree);
      if (signing.algorithm) session.set_signing_algorithm(*signing.algorithm);
      if (encryption.algorithm) session.set_cipher(*encryption.algorithm);
      const json* server_id = Obj(s, "server_id");
      keys[id] = SessionKey{server_id ? Str(*server_id, "pid") : "", Str(s, "uid")};
      session_crypto[id] = {signing, encryption};
      by_id[id] = out.sessions.size();
      out.sessions.push_back(std::move(session));
    }
  }

  // Tree connects, joined to their session. Ordered by tcon id for stable output.
  std::map<std::string, bool> summarised;  // session id -> has at least one tcon
  if (const json* tcons = Obj(doc, "tcons")) {
    for (const auto& [key, t] : tcons->items()) {
      if (!t.is_object()) return Malformed(absl::StrCat("tcons.", key), "not an object");
      std::string session_id = Str(t, "session_id");
      auto found = by_id.find(session_id);
      if (found == by_id.end()) continue;  // session ended between the two reads
      Session& session = out.sessions[found->second];
      ShareConnection* share = session.add_shares();
      share->set_name(Str(t, "service"));
      Crypto signing = ReadCrypto(t, "signing");
      Crypto encryption = ReadCrypto(t, "encryption");
      share->set_signing(signing.degree);
      share->set_encryption(encryption.degree);
      const auto& [session_signing, session_encryption] = session_crypto[session_id];
      // smbstatus 4.17 prints "???" as the tcon cipher for AES-256-GCM; the session has it.
      if (encryption.algorithm) {
        share->set_cipher(*encryption.algorithm);
      } else if (encryption.degree != v1::PROTECTION_NONE && session_encryption.algorithm) {
        share->set_cipher(*session_encryption.algorithm);
      }
      if (signing.algorithm) {
        share->set_signing_algorithm(*signing.algorithm);
      } else if (signing.degree != v1::PROTECTION_NONE && session_signing.algorithm) {
        share->set_signing_algorithm(*session_signing.algorithm);
      }
      ParseTimestamp(Str(t, "connected_at"), share->mutable_connected_at());
      bool first = !summarised[session_id];
      session.set_signing(Summarise(session.signing(), signing.degree, first));
      session.set_encryption(Summarise(session.encryption(), encryption.degree, first));
      summarised[session_id] = true;
    }
  }

  // Open files: one OpenFile per open handle, attributed to the session of the same smbd
  // process and uid.
  std::map<std::string, std::string> share_by_path;
  for (const auto& [name, path] : share_paths) share_by_path[path] = name;
  if (const json* files = Obj(doc, "open_files")) {
    for (const auto& [path, f] : files->items()) {
      if (!f.is_object()) return Malformed(absl::StrCat("open_files.", path), "not an object");
      const json* opens = Obj(f, "opens");
      if (opens == nullptr) continue;
      std::string service_path = Str(f, "service_path");
      std::string filename = Str(f, "filename");
      for (const auto& [open_key, o] : opens->items()) {
        if (!o.is_object()) {
          return Malformed(absl::StrCat("open_files.", path, ".opens.", open_key), "not an object");
        }
        OpenFile file;
        file.set_file_id(open_key);
        file.set_path(path);
        file.set_share_relative_path(filename);
        const json* server_id = Obj(o, "server_id");
        std::string pid = server_id ? Str(*server_id, "pid") : "";
        std::string uid = Str(o, "uid");
        const Session* owner = nullptr;
        for (const Session& s : out.sessions) {
          const SessionKey& k = keys[s.session_id()];
          if (!pid.empty() && k.pid == pid && (owner == nullptr || k.uid == uid)) owner = &s;
        }
        auto share_it = share_by_path.find(service_path);
        if (share_it != share_by_path.end()) file.set_share_name(share_it->second);
        if (owner != nullptr) {
          file.set_session_id(owner->session_id());
          file.set_client_address(owner->client_address());
          file.set_user(owner->user());
          const ShareConnection* tcon = nullptr;
          for (const ShareConnection& sc : owner->shares()) {
            if (file.share_name().empty() ? owner->shares_size() == 1
                                          : absl::EqualsIgnoreCase(sc.name(), file.share_name())) {
              tcon = &sc;
            }
          }
          if (tcon != nullptr) {
            if (file.share_name().empty()) file.set_share_name(tcon->name());
            if (tcon->signing() != v1::PROTECTION_UNSPECIFIED) {
              file.set_signed_(tcon->signing() == v1::PROTECTION_FULL);
            }
            if (tcon->encryption() != v1::PROTECTION_UNSPECIFIED) {
              file.set_encrypted(tcon->encryption() == v1::PROTECTION_FULL);
            }
          }
        }
        out.open_files.push_back(std::move(file));
      }
    }
  }

  for (Session& s : out.sessions) {
    uint64_t opens = 0;
    for (const OpenFile& f : out.open_files) {
      if (f.session_id() == s.session_id()) ++opens;
    }
    s.set_num_opens(opens);
  }
  return out;
}

}  // namespace smbfleet::agent::samba
