#include "collector/auth/authenticate.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

std::string Pem(X509* x) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(bio.get(), x);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

// A CA (self-signed) or a leaf signed by `issuer`, made in memory.
struct Cert {
  X509Ptr x509{nullptr, X509_free};
  KeyPtr key{nullptr, EVP_PKEY_free};
  std::string pem;
};

void AddExt(X509* x, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
}

// subject "OU=agent,CN=fs01"; eku "" = no extendedKeyUsage extension.
Cert Make(const std::string& subject, const Cert* issuer, const std::string& eku, uint64_t serial) {
  Cert c;
  c.key.reset(EVP_EC_gen("P-256"));
  c.x509.reset(X509_new());
  X509* x = c.x509.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, c.key.get());
  X509_NAME* name = X509_get_subject_name(x);
  for (absl::string_view part : absl::StrSplit(subject, ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    X509_NAME_add_entry_by_txt(name, kv.first.c_str(), MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(kv.second.c_str()), -1, -1,
                               0);
  }
  X509* signer = issuer == nullptr ? x : issuer->x509.get();
  EVP_PKEY* signer_key = issuer == nullptr ? c.key.get() : issuer->key.get();
  X509_set_issuer_name(x, X509_get_subject_name(signer));
  if (issuer == nullptr) {
    AddExt(x, x, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(x, x, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExt(x, x, NID_subject_key_identifier, "hash");
  } else {
    AddExt(x, signer, NID_basic_constraints, "CA:FALSE");
    AddExt(x, signer, NID_key_usage, "critical,digitalSignature");
    AddExt(x, signer, NID_authority_key_identifier, "keyid");
    if (!eku.empty()) AddExt(x, signer, NID_ext_key_usage, eku);
  }
  X509_sign(x, signer_key, EVP_sha256());
  c.pem = Pem(x);
  return c;
}

class AuthenticateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    agents_ca_ = Make("O=smbfleet,CN=agents CA", nullptr, "", 1);
    people_ca_ = Make("O=smbfleet,CN=people CA", nullptr, "", 2);
    // Same name as the agents CA, another key: names alone would take it for the agents CA.
    impostor_ca_ = Make("O=smbfleet,CN=agents CA", nullptr, "", 3);
  }

  std::unique_ptr<Authenticator> ByIssuer() {
    auto a = Authenticator::Create({{agents_ca_.pem}, {people_ca_.pem}});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *std::move(a) : nullptr;
  }

  Cert agents_ca_, people_ca_, impostor_ca_;
};

TEST_F(AuthenticateTest, KindComesFromTheIssuingCa) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  EXPECT_TRUE(auth->kind_from_issuer());
  Cert agent = Make("O=smbfleet,OU=agent,CN=FS01", &agents_ca_, "clientAuth", 10);
  auto p = auth->FromCertificate(agent.pem);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, PrincipalKind::kAgent);
  EXPECT_EQ(p->name, "fs01");
  EXPECT_EQ(p->serial, "a");
  EXPECT_EQ(p->fingerprint.size(), 64u);

  Cert person =
      Make("O=smbfleet,OU=operator,OU=viewer,OU=approver,CN=ann", &people_ca_, "clientAuth", 11);
  p = auth->FromCertificate(person.pem);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, PrincipalKind::kOperator);
  EXPECT_EQ(p->roles, (std::vector<std::string>{"viewer", "approver"}));

  // No OU at all: the issuer alone decides.
  Cert bare = Make("O=smbfleet,CN=fs02", &agents_ca_, "clientAuth", 12);
  p = auth->FromCertificate(bare.pem);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, PrincipalKind::kAgent);
}

TEST_F(AuthenticateTest, AnOuThatContradictsTheIssuerIsRefused) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  Cert forged = Make("O=smbfleet,OU=operator,OU=admin,CN=fs01", &agents_ca_, "clientAuth", 20);
  auto p = auth->FromCertificate(forged.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(p.status().message().find("OU=operator"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("CN = fs01"), std::string::npos) << p.status();

  Cert agent_from_people = Make("O=smbfleet,OU=agent,CN=fs09", &people_ca_, "clientAuth", 21);
  EXPECT_EQ(auth->FromCertificate(agent_from_people.pem).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthenticateTest, ACaWithTheSameNameButAnotherKeyIsNotTheIssuer) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  Cert fake = Make("O=smbfleet,OU=agent,CN=fs01", &impostor_ca_, "clientAuth", 30);
  auto p = auth->FromCertificate(fake.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(p.status().message().find("not issued by"), std::string::npos) << p.status();
}

TEST_F(AuthenticateTest, ClientAuthUsageIsRequired) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  Cert server_only = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "serverAuth", 40);
  auto p = auth->FromCertificate(server_only.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("clientAuth"), std::string::npos) << p.status();
  Cert none = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "", 41);
  p = auth->FromCertificate(none.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no extended key usage"), std::string::npos) << p.status();
  Cert both = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "serverAuth,clientAuth", 42);
  EXPECT_TRUE(auth->FromCertificate(both.pem).ok());
}

TEST_F(AuthenticateTest, WithoutIssuersTheKindIsTheFirstOu) {
  auto auth = Authenticator::Create({});
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_FALSE((*auth)->kind_from_issuer());
  Cert person = Make("O=smbfleet,OU=operator,OU=admin,CN=root", &agents_ca_, "clientAuth", 50);
  auto p = (*auth)->FromCertificate(person.pem);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kind, PrincipalKind::kOperator);
  EXPECT_EQ(p->roles, std::vector<std::string>{"admin"});
}

TEST_F(AuthenticateTest, ConfigurationMistakesAreNamed) {
  auto both = Authenticator::Create({{agents_ca_.pem}, {agents_ca_.pem}});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("both"), std::string::npos) << both.status();
  auto junk = Authenticator::Create({{"not a certificate"}, {}});
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("identity.agent_issuers[0]"), std::string::npos)
      << junk.status();
  Cert leaf = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "clientAuth", 60);
  auto not_ca = Authenticator::Create({{}, {leaf.pem}});
  ASSERT_FALSE(not_ca.ok());
  EXPECT_NE(not_ca.status().message().find("not a CA"), std::string::npos) << not_ca.status();
}

class FakeRevocations : public RevocationChecker {
 public:
  bool IsRevoked(absl::string_view serial, absl::string_view fingerprint) const override {
    return serials.count(std::string(serial)) > 0 ||
           fingerprints.count(std::string(fingerprint)) > 0;
  }
  bool IsHostRevoked(absl::string_view host) const override {
    return hosts.count(std::string(host)) > 0;
  }
  std::set<std::string> serials, fingerprints, hosts;
};

TEST_F(AuthenticateTest, ARevokedHostRefusesEveryAgentCertificateOfItNamingTheHost) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  FakeRevocations revoked;
  auth->set_revocations(&revoked);
  Cert first = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "clientAuth", 0x21);
  Cert second = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "clientAuth", 0x22);
  Cert other = Make("O=smbfleet,OU=agent,CN=fs02", &agents_ca_, "clientAuth", 0x23);
  // A person whose certificate happens to carry the same name is not that host.
  Cert person = Make("O=smbfleet,OU=operator,CN=fs01", &people_ca_, "clientAuth", 0x24);
  ASSERT_TRUE(auth->FromCertificate(first.pem).ok());
  revoked.hosts.insert("fs01");
  for (const Cert* c : {&first, &second}) {
    auto p = auth->FromCertificate(c->pem);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_NE(p.status().message().find("host 'fs01' has been revoked"), std::string::npos)
        << p.status();
  }
  EXPECT_TRUE(auth->FromCertificate(other.pem).ok());
  auto operator_principal = auth->FromCertificate(person.pem);
  ASSERT_TRUE(operator_principal.ok()) << operator_principal.status();
  EXPECT_EQ(operator_principal->kind, PrincipalKind::kOperator);
}

TEST_F(AuthenticateTest, ARevokedCertificateIsRefusedNamingItsSerial) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  FakeRevocations revoked;
  auth->set_revocations(&revoked);
  Cert agent = Make("O=smbfleet,OU=agent,CN=fs01", &agents_ca_, "clientAuth", 0x1f);
  ASSERT_TRUE(auth->FromCertificate(agent.pem).ok());
  revoked.serials.insert("1f");
  auto p = auth->FromCertificate(agent.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(p.status().message().find("serial 1f"), std::string::npos) << p.status();
}

// A certificate's checks are kept, revocation is not: the same certificate gets the same answer
// call after call until it is revoked (by fingerprint here), and a refused one stays refused.
TEST_F(AuthenticateTest, AKeptCertificateIsStillCheckedForRevocationOnEveryCall) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  FakeRevocations revoked;
  auth->set_revocations(&revoked);
  Cert agent = Make("O=smbfleet,OU=agent,CN=fs07", &agents_ca_, "clientAuth", 0x31);
  Cert server_only = Make("O=smbfleet,OU=agent,CN=fs08", &agents_ca_, "serverAuth", 0x32);
  for (int call = 0; call < 3; ++call) {
    auto p = auth->FromCertificate(agent.pem);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->name, "fs07");
    EXPECT_EQ(p->kind, PrincipalKind::kAgent);
    auto refused = auth->FromCertificate(server_only.pem);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("not for client authentication"), std::string::npos)
        << refused.status();
  }
  auto id = IdentityFromPem(agent.pem);
  ASSERT_TRUE(id.ok()) << id.status();
  revoked.fingerprints.insert(id->fingerprint);
  auto p = auth->FromCertificate(agent.pem);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("serial 31) has been revoked"), std::string::npos)
      << p.status();
  revoked.fingerprints.clear();
  EXPECT_TRUE(auth->FromCertificate(agent.pem).ok());
}

class FakeTokens : public TokenVerifier {
 public:
  absl::StatusOr<Principal> VerifyToken(absl::string_view token) const override {
    seen = std::string(token);
    if (token != "sft_abc_secret") return absl::UnauthenticatedError("unknown token");
    Principal p;
    p.name = "ann";
    p.kind = PrincipalKind::kOperator;
    p.roles = {"viewer"};
    return p;
  }
  mutable std::string seen;
};

TEST_F(AuthenticateTest, BearerHeaderIsParsed) {
  auto auth = ByIssuer();
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->FromAuthorization("Bearer sft_abc_secret").status().code(),
            absl::StatusCode::kUnauthenticated)
      << "no verifier: tokens are refused";
  FakeTokens tokens;
  auth->set_token_verifier(&tokens);
  auto p = auth->FromAuthorization("Bearer sft_abc_secret");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "ann");
  EXPECT_TRUE(auth->FromAuthorization("bearer  sft_abc_secret ").ok()) << tokens.seen;
  for (const char* bad : {"", "Bearer", "Bearer ", "Basic sft_abc_secret", "sft_abc_secret"}) {
    auto r = auth->FromAuthorization(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated) << bad;
    EXPECT_EQ(r.status().message().find("secret"), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace smbfleet::collector
