// Dependency check for the Windows build, without gRPC: each library does one real thing (protobuf
// round trip, SHA-256 and a TLS client context from OpenSSL, Abseil string formatting, an RE2
// match, c-ares initialisation, a zlib round trip, a YAML document, fmt formatting, a spdlog line)
// and its version is printed.
//   foundation_check.exe    exit 0 when all of that worked
#include <absl/strings/str_cat.h>
#include <ares.h>
#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <re2/re2.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <array>
#include <cstdio>
#include <string>

#include "check.pb.h"

namespace {

bool Report(const char* what, bool ok, const std::string& detail) {
  std::printf("%-9s %s %s\n", what, ok ? "ok" : "FAILED", detail.c_str());
  return ok;
}

}  // namespace

int main() {
  bool ok = true;

  smbfleet::depscheck::Ping ping;
  ping.set_text("smbfleet");
  std::string wire;
  smbfleet::depscheck::Ping back;
  ok &= Report(
      "protobuf",
      ping.SerializeToString(&wire) && back.ParseFromString(wire) && back.text() == "smbfleet",
      google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION));

  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_len = 0;
  const bool sha_ok =
      EVP_Digest("smbfleet", 8, digest.data(), &digest_len, EVP_sha256(), nullptr) == 1;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  ok &= Report("openssl", sha_ok && digest_len == 32 && ctx != nullptr,
               OpenSSL_version(OPENSSL_VERSION));
  SSL_CTX_free(ctx);

  const std::string joined = absl::StrCat("smbfleet-", 16);
  ok &= Report("abseil", joined == "smbfleet-16", joined);

  std::string name;
  int number = 0;
  ok &=
      Report("re2", RE2::FullMatch(joined, R"((\w+)-(\d+))", &name, &number) && number == 16, name);

  const int ares_status = ares_library_init(ARES_LIB_INIT_ALL);
  ok &= Report("c-ares", ares_status == ARES_SUCCESS, ares_version(nullptr));
  ares_library_cleanup();

  std::array<unsigned char, 256> packed{};
  uLongf packed_len = packed.size();
  std::array<unsigned char, 64> unpacked{};
  uLongf unpacked_len = unpacked.size();
  const auto* text = reinterpret_cast<const Bytef*>(joined.data());
  const bool zlib_ok =
      compress(packed.data(), &packed_len, text, joined.size()) == Z_OK &&
      uncompress(unpacked.data(), &unpacked_len, packed.data(), packed_len) == Z_OK &&
      std::string(reinterpret_cast<const char*>(unpacked.data()), unpacked_len) == joined;
  ok &= Report("zlib", zlib_ok, zlibVersion());

  const YAML::Node config = YAML::Load("collector: fleet.example:8443\nshares: [data, home]\n");
  ok &= Report(
      "yaml-cpp",
      config["shares"].size() == 2 && config["collector"].as<std::string>() == "fleet.example:8443",
      config["collector"].as<std::string>());

  const std::string formatted = fmt::format("{}-{:03d}", "smbfleet", 16);
  ok &= Report("fmt", formatted == "smbfleet-016", std::to_string(FMT_VERSION));

  std::ostringstream log_text;
  auto logger = std::make_shared<spdlog::logger>(
      "check", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text));
  logger->set_pattern("%l %v");
  logger->info("posture {}", 16);
  logger->flush();
  ok &= Report("spdlog", log_text.str().find("info posture 16") != std::string::npos,
               fmt::format("{}.{}.{}", SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH));

  return ok ? 0 : 1;
}
