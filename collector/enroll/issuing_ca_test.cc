// The issuing CA against real OpenSSL requests: what it issues, and the hostile requests it
// refuses (a forged signature, another host's name, odd characters, weak keys, extra subject).
#include "collector/enroll/issuing_ca.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "collector/enroll/test_ca.h"
#include "common/csr.h"
#include "common/testing/temp_dir.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using testing_ca::MakeCa;
using testing_ca::Pem;
using testing_ca::TestCa;

// A CSR with the given subject entries, for `key`, signed by `signer` (normally the same key).
std::string Csr(EVP_PKEY* key, EVP_PKEY* signer,
                const std::vector<std::pair<std::string, std::string>>& subject) {
  X509_REQ* req = X509_REQ_new();
  X509_NAME* name = X509_REQ_get_subject_name(req);
  for (const auto& [field, value] : subject) {
    X509_NAME_add_entry_by_txt(name, field.c_str(), MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(value.data()),
                               static_cast<int>(value.size()), -1, 0);
  }
  X509_REQ_set_pubkey(req, key);
  X509_REQ_sign(req, signer, EVP_sha256());
  std::string out = Pem(req);
  X509_REQ_free(req);
  return out;
}

class IssuingCaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_ca_ = MakeCa();
    auto ca = IssuingCa::FromPem(test_ca_.cert_pem, test_ca_.key_pem, absl::Hours(24 * 7));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
  }

  TestCa test_ca_;
  std::unique_ptr<IssuingCa> ca_;
};

TEST_F(IssuingCaTest, IssuesAShortLivedAgentCertificateForTheHost) {
  auto request = GenerateKeyAndCsr("fs01.example.org");
  ASSERT_TRUE(request.ok()) << request.status();
  auto issued = ca_->Sign(request->csr_pem, "fs01.example.org", kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();

  auto id = IdentityFromPem(issued->certificate_pem);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->name, "fs01.example.org");
  EXPECT_EQ(id->kind, "agent");
  EXPECT_EQ(id->not_after_unix - absl::ToUnixSeconds(kNow), 7 * 24 * 3600);
  EXPECT_LE(id->not_before_unix, absl::ToUnixSeconds(kNow));
  EXPECT_EQ(issued->record.serial(), id->serial);
  EXPECT_GE(id->serial.size(), 31u);  // 128 random bits
  EXPECT_EQ(issued->record.fingerprint(), id->fingerprint);
  EXPECT_EQ(issued->record.host(), "fs01.example.org");
  EXPECT_EQ(issued->record.not_after().seconds(), id->not_after_unix);

  // Signed by the CA, for client authentication only, naming the host in its SAN.
  BIO* bio = BIO_new_mem_buf(issued->certificate_pem.data(),
                             static_cast<int>(issued->certificate_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(cert, nullptr);
  BIO* ca_bio =
      BIO_new_mem_buf(test_ca_.cert_pem.data(), static_cast<int>(test_ca_.cert_pem.size()));
  X509* ca_cert = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
  BIO_free(ca_bio);
  EXPECT_EQ(X509_verify(cert, X509_get0_pubkey(ca_cert)), 1);
  EXPECT_EQ(X509_get_extended_key_usage(cert), static_cast<uint32_t>(XKU_SSL_CLIENT));
  EXPECT_EQ(X509_check_host(cert, "fs01.example.org", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ca(cert), 0);
  X509_free(cert);
  X509_free(ca_cert);

  auto again = ca_->Sign(request->csr_pem, "fs01.example.org", kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->record.serial(), issued->record.serial());
}

TEST_F(IssuingCaTest, RsaOf2048BitsIsAccepted) {
  Pkey rsa(EVP_RSA_gen(2048));
  auto issued = ca_->Sign(Csr(rsa.get(), rsa.get(), {{"CN", "fs02"}}), "fs02", kNow);
  EXPECT_TRUE(issued.ok()) << issued.status();
}

struct HostileCase {
  std::string name;
  std::function<std::string()> csr;
  std::string host;
  std::string error;
};

TEST_F(IssuingCaTest, HostileRequestsAreRefusedWithTheReason) {
  Pkey ec(EVP_EC_gen("P-256"));
  Pkey other(EVP_EC_gen("P-256"));
  const std::vector<HostileCase> cases = {
      {"not a CSR", [] { return std::string("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n"); },
       "fs01", "not a PEM certificate signing request"},
      {"empty", [] { return std::string(); }, "fs01", "required"},
      {"signed by another key",
       [&] {
         return Csr(ec.get(), other.get(), {{"CN", "fs01"}});
       },
       "fs01", "signature does not verify"},
      {"another host's name",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "fs02"}});
       },
       "fs01", "is not the host name 'fs01'"},
      {"upper case",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "FS01"}});
       },
       "fs01", "lower-case letters"},
      {"newline in CN",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "fs01\nfs02"}});
       },
       "fs01", "lower-case letters"},
      {"NUL in CN",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", std::string("fs01\0x", 6)}});
       },
       "fs01", "lower-case letters"},
      {"wildcard",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "*.example.org"}});
       },
       "*.example.org", "lower-case letters"},
      {"empty label",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "fs01..org"}});
       },
       "fs01..org", "each label"},
      {"leading hyphen",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "-fs01"}});
       },
       "-fs01", "starts or ends"},
      {"extra OU asks for a role",
       [&] {
         return Csr(ec.get(), ec.get(), {{"CN", "fs01"}, {"OU", "operator"}});
       },
       "fs01", "exactly CN=<host name>"},
      {"no subject", [&] { return Csr(ec.get(), ec.get(), {}); }, "fs01", "exactly CN=<host name>"},
      {"tiny RSA key",
       [] {
         Pkey rsa(EVP_RSA_gen(1024));
         return Csr(rsa.get(), rsa.get(), {{"CN", "fs01"}});
       },
       "fs01", "1024 bits; at least 2048"},
      {"P-384",
       [] {
         Pkey p384(EVP_EC_gen("P-384"));
         return Csr(p384.get(), p384.get(), {{"CN", "fs01"}});
       },
       "fs01", "P-256"},
      {"Ed25519",
       [] {
         Pkey ed(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
         X509_REQ* req = X509_REQ_new();
         X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req), "CN", MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>("fs01"), -1, -1, 0);
         X509_REQ_set_pubkey(req, ed.get());
         X509_REQ_sign(req, ed.get(), nullptr);
         std::string out = Pem(req);
         X509_REQ_free(req);
         return out;
       },
       "fs01", "EC P-256 or RSA"},
  };
  for (const auto& c : cases) {
    auto issued = ca_->Sign(c.csr(), c.host, kNow);
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(issued.status().message(), HasSubstr(c.error)) << c.name;
  }
}

TEST_F(IssuingCaTest, CsrCommonNameReadsTheSubject) {
  auto request = GenerateKeyAndCsr("fs07");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(*IssuingCa::CsrCommonName(request->csr_pem), "fs07");
  EXPECT_FALSE(IssuingCa::CsrCommonName("junk").ok());
}

TEST(IssuingCaLoadTest, RefusesAKeyOthersCanRead) {
  TestCa test_ca = MakeCa();
  const std::string dir = smbfleet::testing::MakeTestDir("issuing-ca");
  const std::string cert = dir + "/agents-ca.pem";
  const std::string key = dir + "/agents-ca.key";
  std::ofstream(cert) << test_ca.cert_pem;
  std::ofstream(key) << test_ca.key_pem;
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  auto loaded = IssuingCa::Load(cert, key, absl::Hours(24));
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(loaded.status().message(), HasSubstr("0644"));
  EXPECT_THAT(loaded.status().message(), ::testing::Not(HasSubstr("PRIVATE KEY")));
  ASSERT_EQ(chmod(key.c_str(), 0600), 0);
  auto ok = IssuingCa::Load(cert, key, absl::Hours(24));
  EXPECT_TRUE(ok.ok()) << ok.status();
  EXPECT_FALSE(IssuingCa::Load(cert, key, absl::Seconds(10)).ok());  // lifetime too short
  // A key that is not the certificate's.
  Pkey other(EVP_EC_gen("P-256"));
  EXPECT_THAT(
      IssuingCa::FromPem(test_ca.cert_pem, Pem(other.get()), absl::Hours(24)).status().message(),
      HasSubstr("does not belong"));
  std::remove(cert.c_str());
  std::remove(key.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace smbfleet::collector
