#include "loadgen/sim_posture.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/version.h"

namespace smbfleet::loadgen {

namespace v1 = smbfleet::v1;

v1::Posture SimulatedPosture(const std::string& host, uint64_t sequence, std::mt19937_64& rng) {
  v1::Posture p;
  v1::HostInfo* h = p.mutable_host();
  h->set_hostname(host);
  h->set_fqdn(absl::StrCat(host, ".lab.example"));
  h->set_os_name("Debian GNU/Linux 12 (bookworm)");
  h->set_os_version("4.17.12-Debian");
  h->set_samba_version("4.17.12-Debian");
  h->set_platform(v1::PLATFORM_SAMBA);
  h->set_agent_version(absl::StrCat("smbfleet-loadgen/", kVersion));
  (*h->mutable_labels())["site"] = "sim";
  h->set_logical_cores(4);

  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
  p.mutable_collected_at()->set_seconds(micros / 1'000'000);
  p.mutable_collected_at()->set_nanos(static_cast<int32_t>(micros % 1'000'000) * 1000);

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

  for (const char* name : {"demo", "finance", "home"}) {
    v1::Share* share = p.add_shares();
    share->set_name(name);
    share->set_path(absl::StrCat("/srv/samba/", name));
    share->set_encrypt_data(std::string(name) == "finance");
    share->set_read_only(false);
    share->set_guest_ok(false);
    share->set_share_type("FileSystemDirectory");
  }

  // One to eight sessions, each with its own id: the part of the posture that changes most.
  std::uniform_int_distribution<int> sessions(1, 8);
  std::uniform_int_distribution<int> octet(2, 250);
  const int n = sessions(rng);
  for (int i = 0; i < n; ++i) {
    v1::Session* session = p.add_sessions();
    session->set_session_id(absl::StrCat(rng() % 4'000'000'000ULL));
    session->set_client_address(absl::StrCat("10.20.", octet(rng), ".", octet(rng)));
    session->set_client_name(absl::StrCat("ws-", octet(rng)));
    session->set_user(absl::StrCat("LAB\\user", octet(rng)));
    const bool modern = rng() % 4 != 0;
    session->set_dialect(modern ? v1::DIALECT_SMB_3_1_1 : v1::DIALECT_SMB_2_1);
    session->set_dialect_raw(modern ? "SMB3_11" : "SMB2_10");
    session->set_signing(v1::PROTECTION_FULL);
    session->set_signing_algorithm(modern ? v1::AES_128_GMAC : v1::HMAC_SHA256);
    session->set_encryption(modern ? v1::PROTECTION_FULL : v1::PROTECTION_NONE);
    if (modern) session->set_cipher(v1::AES_128_GCM);
    session->set_num_opens(rng() % 20);
    session->set_seconds_exists(static_cast<uint32_t>(rng() % 86'400));
    session->add_shares()->set_name(i % 2 == 0 ? "demo" : "finance");
  }
  return p;
}

}  // namespace smbfleet::loadgen
