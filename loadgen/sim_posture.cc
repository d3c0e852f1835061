#include "loadgen/sim_posture.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/version.h"

namespace smbfleet::loadgen {

namespace v1 = smbfleet::v1;

namespace {

void SetTime(google::protobuf::Timestamp* t, std::chrono::system_clock::time_point at) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count();
  t->set_seconds(micros / 1'000'000);
  t->set_nanos(static_cast<int32_t>(micros % 1'000'000) * 1000);
}

// Skewed towards small: `u` in [0,1) cubed spreads over lo..hi.
int Skewed(std::mt19937_64& rng, int lo, int hi) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  return lo + static_cast<int>(std::floor(u * u * u * (hi - lo + 1)));
}

void WindowsHost(const std::string& host, uint64_t sequence, v1::Posture& p) {
  v1::HostInfo* h = p.mutable_host();
  h->set_os_name("Microsoft Windows Server 2022 Datacenter");
  h->set_os_version("10.0.20348");
  h->set_os_build("20348.2340");
  h->set_platform(v1::PLATFORM_WINDOWS);
  h->set_domain("LAB");
  h->set_domain_joined(true);
  h->set_fqdn(absl::StrCat(host, ".lab.example"));
  v1::ServerConfig* s = p.mutable_server();
  s->set_smb1_enabled(sequence % 7 == 3);
  s->set_smb2_enabled(true);
  s->set_enable_signing(true);
  s->set_require_signing(sequence % 2 == 0);
  s->set_encrypt_data(sequence % 3 == 0);
  s->set_reject_unencrypted_access(true);
  s->set_audit_smb1_access(true);
  s->set_min_dialect(v1::DIALECT_SMB_2_0_2);
  s->set_max_dialect(v1::DIALECT_SMB_3_1_1);
  for (auto c : {v1::AES_128_GCM, v1::AES_128_CCM, v1::AES_256_GCM, v1::AES_256_CCM}) {
    s->add_encryption_ciphers(c);
  }
  for (auto a : {v1::AES_128_GMAC, v1::AES_128_CMAC, v1::HMAC_SHA256}) {
    s->add_signing_algorithms(a);
  }
  s->set_name_hardening_level(0);
  s->set_enable_auth_rate_limiter(true);
  s->set_invalid_authentication_delay_ms(2000);
  for (const char* name : {"ADMIN$", "C$", "IPC$"}) {
    v1::Share* share = p.add_shares();
    share->set_name(name);
    share->set_special(true);
    share->set_share_type(std::string(name) == "IPC$" ? "InterprocessCommunication"
                                                      : "FileSystemDirectory");
    if (std::string(name) != "IPC$") share->set_path("C:\\");
  }
}

void SambaHost(const std::string& host, uint64_t sequence, v1::Posture& p) {
  v1::HostInfo* h = p.mutable_host();
  h->set_os_name("Debian GNU/Linux 12 (bookworm)");
  h->set_os_version("4.17.12-Debian");
  h->set_samba_version("4.17.12-Debian");
  h->set_platform(v1::PLATFORM_SAMBA);
  h->set_fqdn(absl::StrCat(host, ".lab.example"));
  v1::ServerConfig* s = p.mutable_server();
  s->set_smb1_enabled(false);
  s->set_smb2_enabled(true);
  s->set_enable_signing(true);
  s->set_require_signing(sequence % 2 == 0);
  s->set_encrypt_data(sequence % 3 == 0);
  s->set_min_dialect(sequence % 5 == 0 ? v1::DIALECT_SMB_3_1_1 : v1::DIALECT_SMB_2_1);
  s->set_max_dialect(v1::DIALECT_SMB_3_1_1);
  s->add_encryption_ciphers(v1::AES_128_GCM);
  s->add_encryption_ciphers(v1::AES_256_GCM);
}

}  // namespace

HostShape DrawShape(std::mt19937_64& rng) {
  HostShape shape;
  shape.windows = rng() % 10 < 3;
  shape.shares = Skewed(rng, 1, 50);
  shape.sessions = Skewed(rng, 0, 200);
  shape.events = static_cast<int>(rng() % 6);
  return shape;
}

v1::Posture SimulatedPosture(const std::string& host, const HostShape& shape, uint64_t sequence,
                             std::mt19937_64& rng, uint64_t settings_every,
                             uint64_t session_reports) {
  const uint64_t settings = sequence / std::max<uint64_t>(settings_every, 1);
  v1::Posture p;
  v1::HostInfo* h = p.mutable_host();
  h->set_hostname(host);
  h->set_agent_version(absl::StrCat("smbfleet-loadgen/", kVersion));
  (*h->mutable_labels())["site"] = "sim";
  h->set_logical_cores(shape.windows ? 8 : 4);
  if (shape.windows) {
    WindowsHost(host, settings, p);
  } else {
    SambaHost(host, settings, p);
  }
  const auto now = std::chrono::system_clock::now();
  SetTime(p.mutable_collected_at(), now);

  // The first share of three is "finance" (classified confidential by the baseline policy).
  static constexpr const char* kNames[] = {"finance", "demo", "home", "projects", "scans"};
  for (int i = 0; i < shape.shares; ++i) {
    v1::Share* share = p.add_shares();
    const std::string name = absl::StrCat(kNames[i % 5], i < 5 ? "" : absl::StrCat(i / 5));
    share->set_name(name);
    share->set_path(shape.windows ? absl::StrCat("D:\\Shares\\", name)
                                  : absl::StrCat("/srv/samba/", name));
    share->set_encrypt_data(i % 5 == 0);
    share->set_read_only(i % 4 == 3);
    share->set_guest_ok(false);
    share->set_share_type("FileSystemDirectory");
  }

  std::uniform_int_distribution<int> octet(2, 250);
  session_reports = std::max<uint64_t>(session_reports, 1);
  for (int i = 0; i < shape.sessions; ++i) {
    // A lasting session's client comes from its slot and generation, not from `rng`.
    const uint64_t slot_age = (sequence + static_cast<uint64_t>(i)) % session_reports;
    const uint64_t generation = (sequence + static_cast<uint64_t>(i)) / session_reports;
    std::mt19937_64 lasting(std::hash<std::string>()(host) ^
                            (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL) ^
                            (generation * 0xc2b2ae3d27d4eb4fULL));
    std::mt19937_64& client = session_reports > 1 ? lasting : rng;
    v1::Session* session = p.add_sessions();
    session->set_session_id(absl::StrCat(client() % 4'000'000'000ULL));
    session->set_client_address(absl::StrCat("10.20.", octet(client), ".", octet(client)));
    session->set_client_name(absl::StrCat("ws-", octet(client)));
    session->set_user(absl::StrCat("LAB\\user", octet(client)));
    const bool modern = client() % 4 != 0;
    session->set_dialect(modern ? v1::DIALECT_SMB_3_1_1 : v1::DIALECT_SMB_2_1);
    if (shape.windows) {
      session->set_dialect_raw(modern ? "3.1.1" : "2.1");
    } else {
      session->set_dialect_raw(modern ? "SMB3_11" : "SMB2_10");
    }
    session->set_signing(v1::PROTECTION_FULL);
    session->set_signing_algorithm(modern ? v1::AES_128_GMAC : v1::HMAC_SHA256);
    session->set_encryption(modern ? v1::PROTECTION_FULL : v1::PROTECTION_NONE);
    if (modern) session->set_cipher(v1::AES_128_GCM);
    session->set_num_opens(rng() % 20);
    const uint64_t seconds =
        session_reports > 1 ? client() % 3'600 + slot_age * 3'600 : rng() % 86'400;
    session->set_seconds_exists(static_cast<uint32_t>(seconds));
    session->add_shares()->set_name(p.shares(i % p.shares_size()).name());
  }

  for (int i = 0; i < shape.events; ++i) {
    v1::Event* e = p.add_events();
    SetTime(e->mutable_time(), now - std::chrono::minutes(1 + rng() % 60));
    e->set_client_address(absl::StrCat("10.20.", octet(rng), ".", octet(rng)));
    e->set_share_name(p.shares(0).name());
    if (shape.windows) {
      // A client that cannot encrypt was refused a share that requires it (SMBServer 1003 kind).
      e->set_event_id(i % 2 == 0 ? 1003 : 3000);
      e->set_channel(i % 2 == 0 ? "Microsoft-Windows-SMBServer/Operational"
                                : "Microsoft-Windows-SMBServer/Audit");
      e->set_provider("Microsoft-Windows-SMBServer");
      e->set_level(v1::EVENT_LEVEL_WARNING);
      e->set_kind(i % 2 == 0 ? "client_no_encryption" : "smb1_access");
      e->set_record_id(sequence * 10 + static_cast<uint64_t>(i));
    } else {
      e->set_channel("samba");
      e->set_provider("smbd");
      e->set_level(v1::EVENT_LEVEL_WARNING);
      e->set_kind("client_no_encryption");
      e->set_message("encryption is required for service " + p.shares(0).name());
    }
  }
  return p;
}

}  // namespace smbfleet::loadgen
