// The collector's TLS from its files: a renewed server certificate is served without a restart,
// TLS 1.1 is refused and TLS 1.3 is what a modern client gets, and client certificates still
// identify their holders through these credentials. The TLS client is the openssl command.
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/server/collector.h"
#include "collector/store/memory/memory_store.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// stdout and stderr of a shell command.
std::string Output(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, decltype(&pclose)> p(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
  return out;
}

class TlsReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = smbfleet::testing::MakeCertificates("fs01");
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.tls = {pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"};
    config.tls_reload = std::chrono::seconds(1);
    config.identity.agent_issuers = {pki_ + "/agents-ca.pem"};
    config.identity.operator_issuers = {pki_ + "/people-ca.pem"};
    auto tls = LoadTls(config.tls);
    ASSERT_TRUE(tls.ok()) << tls.status();
    Stores stores;
    auto hosts = std::make_unique<MemoryHostStore>();
    stores.compliance = std::make_unique<MemoryComplianceStore>(hosts.get());
    stores.hosts = std::move(hosts);
    auto c = Collector::Start(config, *tls, std::move(stores));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
  }

  // What `openssl s_client` prints for a handshake with these extra flags.
  std::string Handshake(const std::string& flags) {
    return Output(absl::StrCat("openssl s_client -connect 127.0.0.1:", collector_->port(),
                               " -servername localhost -CAfile ", pki_, "/ca.pem ", flags,
                               " </dev/null"));
  }

  std::string ServedSerial() {
    return Output(absl::StrCat("openssl s_client -connect 127.0.0.1:", collector_->port(),
                               " -servername localhost </dev/null 2>/dev/null | openssl x509 "
                               "-noout -serial"));
  }

  std::string pki_;
  std::unique_ptr<Collector> collector_;
};

TEST_F(TlsReloadTest, OnlyTls12AndUpAndModernClientsGet13) {
  // SECLEVEL=0 lets this openssl offer TLS 1.1 at all: the refusal is the collector's.
  std::string old = Handshake("-tls1_1 -cipher DEFAULT@SECLEVEL=0");
  // No handshake: nothing came back, no cipher was agreed.
  EXPECT_TRUE(absl::StrContains(old, "no peer certificate available")) << old;
  EXPECT_FALSE(absl::StrContains(old, "New, TLSv1.1")) << old;
  std::string v12 = Handshake("-tls1_2");
  EXPECT_TRUE(absl::StrContains(v12, "TLSv1.2")) << v12;
  std::string modern = Handshake("");
  EXPECT_TRUE(absl::StrContains(modern, "New, TLSv1.3")) << modern;
  EXPECT_TRUE(absl::StrContains(modern, "Verify return code: 0 (ok)")) << modern;
}

TEST_F(TlsReloadTest, ARenewedServerCertificateIsServedWithoutARestart) {
  const std::string before = ServedSerial();
  ASSERT_TRUE(absl::StartsWith(before, "serial=")) << before;
  ASSERT_EQ(std::system(absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/ca.sh collector ", pki_,
                                     " localhost >/dev/null 2>&1")
                            .c_str()),
            0);
  const std::string renewed =
      Output(absl::StrCat("openssl x509 -noout -serial -in ", pki_, "/collector.pem"));
  ASSERT_NE(renewed, before);
  const absl::Time start = absl::Now();
  std::string now = before;
  while (now != renewed && absl::Now() - start < absl::Seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    now = ServedSerial();
  }
  EXPECT_EQ(now, renewed) << "still serving " << now;
  std::printf("{\"tls_reload_served_after_ms\": %.0f}\n",
              absl::ToDoubleMilliseconds(absl::Now() - start));

  // Client certificates still name their holders through these credentials.
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = ReadAll(pki_ + "/ca.pem");
  opts.pem_cert_chain = ReadAll(pki_ + "/operator-admin.pem");
  opts.pem_private_key = ReadAll(pki_ + "/operator-admin.key");
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto admin = smbfleet::v1::AdminService::NewStub(grpc::CreateCustomChannel(
      absl::StrCat("127.0.0.1:", collector_->port()), grpc::SslCredentials(opts), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  smbfleet::v1::WhoAmIResponse me;
  grpc::Status s = admin->WhoAmI(&ctx, {}, &me);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(me.name(), "admin");
  EXPECT_EQ(me.credential(), "certificate");
  EXPECT_THAT(me.roles(), ::testing::ElementsAre("admin"));
}

}  // namespace
}  // namespace smbfleet::collector
