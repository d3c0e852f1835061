// Enroll and RenewCertificate over the memory store and a throwaway CA: what a good token gets,
// and every way a token, a host or a request is refused (without spending the token or echoing
// its secret).
#include "collector/enroll/enrollment_api.h"

#include "collector/auth/revocations.h"
#include "collector/enroll/test_ca.h"
#include "collector/store/memory/memory_enrollment_store.h"
#include "common/csr.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;
using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

Principal Anonymous() {
  Principal p;
  p.kind = PrincipalKind::kAnonymous;
  p.kind_text = "anonymous";
  return p;
}

Principal Agent(const std::string& host) {
  Principal p;
  p.name = host;
  p.kind = PrincipalKind::kAgent;
  p.kind_text = "agent";
  return p;
}

class EnrollmentApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing_ca::TestCa test_ca = testing_ca::MakeCa();
    auto ca = IssuingCa::FromPem(test_ca.cert_pem, test_ca.key_pem, absl::Hours(24 * 7));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *std::move(ca);
    api_ = std::make_unique<EnrollmentApi>(&store_, ca_.get(), [this] { return now_; });
  }

  // A token in the store; returns its text.
  std::string AddToken(uint32_t max_uses, absl::Time expires, bool allow_reenrollment = false) {
    EnrollmentSecret s = NewEnrollmentSecret();
    v1::EnrollmentToken t;
    t.set_id(s.id);
    (*t.mutable_labels())["class"] = "strict";
    (*t.mutable_labels())["site"] = "paris";
    t.set_max_uses(max_uses);
    *t.mutable_expires_at() = TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(expires));
    *t.mutable_created_at() = TimeUtil::SecondsToTimestamp(absl::ToUnixSeconds(kNow));
    t.set_allow_reenrollment(allow_reenrollment);
    EXPECT_TRUE(store_.CreateToken(t, SecretSha256(s.secret)).ok());
    return EnrollmentTokenText(s);
  }

  static v1::EnrollRequest Request(const std::string& token, const std::string& host) {
    v1::EnrollRequest r;
    r.set_token(token);
    auto csr = GenerateKeyAndCsr(host);
    EXPECT_TRUE(csr.ok()) << csr.status();
    r.set_csr_pem(csr->csr_pem);
    return r;
  }

  static std::string IdOf(const std::string& token) { return token.substr(4, 16); }

  uint32_t Uses(const std::string& token) { return (*store_.GetToken(IdOf(token)))->token.uses(); }

  MemoryEnrollmentStore store_;
  std::unique_ptr<IssuingCa> ca_;
  std::unique_ptr<EnrollmentApi> api_;
  absl::Time now_ = kNow;
};

TEST_F(EnrollmentApiTest, TokenTextRoundTripsAndBadTextIsNotEchoed) {
  EnrollmentSecret s = NewEnrollmentSecret();
  auto parsed = ParseEnrollmentToken(EnrollmentTokenText(s) + "\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->id, s.id);
  EXPECT_EQ(parsed->secret, s.secret);
  for (const std::string& bad : {std::string("set_") + s.id + "_" + s.secret.substr(1),
                                 std::string("xyz_") + s.id + "_" + s.secret,
                                 std::string("set_") + s.id + "_" + "G" + s.secret.substr(1)}) {
    auto r = ParseEnrollmentToken(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), Not(HasSubstr(s.secret.substr(2, 20)))) << bad;
  }
}

TEST_F(EnrollmentApiTest, EnrollIssuesForTheCsrHostAndGivesTheTokensLabels) {
  const std::string token = AddToken(2, kNow + absl::Hours(1));
  auto response = api_->Enroll(Anonymous(), Request(token, "fs01.example.org"));
  ASSERT_TRUE(response.ok()) << response.status();
  auto id = IdentityFromPem(response->certificate_pem());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->name, "fs01.example.org");
  EXPECT_EQ(id->kind, "agent");
  EXPECT_EQ(response->ca_chain_pem(), ca_->ca_pem());
  EXPECT_EQ(response->not_after().seconds(), absl::ToUnixSeconds(kNow + absl::Hours(24 * 7)));
  EXPECT_EQ(response->labels().at("site"), "paris");
  EXPECT_EQ(Uses(token), 1u);
  EXPECT_EQ(*store_.GetHostLabels("fs01.example.org"),
            (HostLabels{{"class", "strict"}, {"site", "paris"}}));
  auto certs = store_.ListCertificates("fs01.example.org", false, kNow);
  ASSERT_EQ(certs->size(), 1u);
  EXPECT_EQ((*certs)[0].serial(), id->serial);
  EXPECT_EQ((*certs)[0].enrollment_token_id(), IdOf(token));
}

TEST_F(EnrollmentApiTest, WrongOrUnknownTokenIsRefusedAlikeWithoutTheSecret) {
  const std::string token = AddToken(1, kNow + absl::Hours(1));
  std::string wrong = token;
  wrong.back() = wrong.back() == '0' ? '1' : '0';
  auto refused = api_->Enroll(Anonymous(), Request(wrong, "fs01"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("unknown or wrong"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr(wrong.substr(21))));
  EXPECT_EQ(Uses(token), 0u);

  EnrollmentSecret unknown = NewEnrollmentSecret();
  auto unknown_refused = api_->Enroll(Anonymous(), Request(EnrollmentTokenText(unknown), "fs01"));
  EXPECT_EQ(unknown_refused.status(), refused.status());
}

TEST_F(EnrollmentApiTest, OneUseTokenIsRefusedTheSecondTime) {
  const std::string token = AddToken(1, kNow + absl::Hours(1));
  ASSERT_TRUE(api_->Enroll(Anonymous(), Request(token, "fs01")).ok());
  auto second = api_->Enroll(Anonymous(), Request(token, "fs02"));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(second.status().message(), HasSubstr("used up"));
  EXPECT_TRUE(store_.ListCertificates("fs02", true, kNow)->empty());
}

TEST_F(EnrollmentApiTest, ExpiredAndRevokedTokensSayWhy) {
  const std::string expired = AddToken(5, kNow + absl::Minutes(1));
  now_ = kNow + absl::Minutes(2);
  EXPECT_THAT(api_->Enroll(Anonymous(), Request(expired, "fs01")).status().message(),
              HasSubstr("expired"));
  const std::string revoked = AddToken(5, kNow + absl::Hours(1));
  ASSERT_TRUE(store_.RevokeToken(IdOf(revoked), "root-admin", "leaked", kNow).ok());
  EXPECT_THAT(api_->Enroll(Anonymous(), Request(revoked, "fs01")).status().message(),
              HasSubstr("revoked"));
}

TEST_F(EnrollmentApiTest, BadCsrDoesNotSpendTheToken) {
  const std::string token = AddToken(1, kNow + absl::Hours(1));
  v1::EnrollRequest request = Request(token, "fs01");
  request.set_csr_pem("not a csr");
  EXPECT_EQ(api_->Enroll(Anonymous(), request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Uses(token), 0u);
}

TEST_F(EnrollmentApiTest, HostWithAValidCertificateNeedsAReenrollmentToken) {
  ASSERT_TRUE(api_->Enroll(Anonymous(), Request(AddToken(1, kNow + absl::Hours(1)), "fs01")).ok());
  const std::string plain = AddToken(1, kNow + absl::Hours(1));
  auto again = api_->Enroll(Anonymous(), Request(plain, "fs01"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("still holds a valid certificate"));
  EXPECT_EQ(Uses(plain), 0u);
  const std::string rebuild = AddToken(1, kNow + absl::Hours(1), /*allow_reenrollment=*/true);
  EXPECT_TRUE(api_->Enroll(Anonymous(), Request(rebuild, "fs01")).ok());
  // Once the certificate has expired, a plain token enrolls the host again.
  now_ = kNow + absl::Hours(24 * 8);
  const std::string later = AddToken(1, now_ + absl::Hours(1));
  EXPECT_TRUE(api_->Enroll(Anonymous(), Request(later, "fs01")).ok());
}

// A host whose certificate was revoked (a rebuilt server, a lost key) enrolls again with a plain
// token: only a certificate that is still good stands in the way.
TEST_F(EnrollmentApiTest, ARevokedCertificateDoesNotBlockEnrollingAgain) {
  auto first = api_->Enroll(Anonymous(), Request(AddToken(1, kNow + absl::Hours(1)), "fs01"));
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string revoked_serial = IdentityFromPem(first->certificate_pem())->serial;
  api_->SetRevocationCheck(
      [revoked_serial](const std::string&, const std::string& serial, const std::string&) {
        return absl::StatusOr<bool>(serial == revoked_serial);
      });
  auto again = api_->Enroll(Anonymous(), Request(AddToken(1, kNow + absl::Hours(1)), "fs01"));
  ASSERT_TRUE(again.ok()) << again.status();
  // The new certificate is good: a third plain enrollment is refused again.
  auto third = api_->Enroll(Anonymous(), Request(AddToken(1, kNow + absl::Hours(1)), "fs01"));
  EXPECT_EQ(third.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(EnrollmentApiTest, RevocationHookRefusesARevokedHost) {
  api_->SetRevocationCheck(
      [](const std::string& host, const std::string& serial, const std::string&) {
        return absl::StatusOr<bool>(host == "fs01" || serial == "bad");
      });
  const std::string token = AddToken(2, kNow + absl::Hours(1));
  auto refused = api_->Enroll(Anonymous(), Request(token, "fs01"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("revoked"));
  EXPECT_EQ(Uses(token), 0u);
  v1::RenewCertificateRequest renew;
  renew.set_csr_pem(GenerateKeyAndCsr("fs02")->csr_pem);
  EXPECT_EQ(api_->RenewCertificate(Agent("fs02"), "bad", "", renew).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(api_->RenewCertificate(Agent("fs02"), "good", "", renew).ok());
}

// The check the collector installs, over the revocations it keeps: a revoked host may not enroll
// again, not even with a token that allows re-enrollment; other hosts are not affected.
TEST_F(EnrollmentApiTest, TheCollectorsCheckRefusesARevokedHostEvenWithAReenrollmentToken) {
  auto identity = NewMemoryIdentityStore();
  Revocations revocations(identity.get(), absl::Hours(1), nullptr);
  ASSERT_TRUE(revocations.Start().ok());
  api_->SetRevocationCheck(RevocationCheckOf(&revocations));
  ASSERT_TRUE(api_->Enroll(Anonymous(), Request(AddToken(1, kNow + absl::Hours(1)), "fs01")).ok());

  v1::Revocation host;
  host.set_host("fs01");
  host.set_reason("decommissioned");
  host.set_revoked_by("root-admin");
  ASSERT_TRUE(identity->AddRevocation(host).ok());
  ASSERT_TRUE(revocations.Refresh().ok());

  const std::string token = AddToken(2, kNow + absl::Hours(1), /*allow_reenrollment=*/true);
  auto refused = api_->Enroll(Anonymous(), Request(token, "fs01"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("host fs01 is revoked"));
  EXPECT_EQ(Uses(token), 0u);
  EXPECT_TRUE(api_->Enroll(Anonymous(), Request(token, "fs02")).ok());
}

TEST_F(EnrollmentApiTest, RenewIsForTheAgentsOwnHostOnly) {
  v1::RenewCertificateRequest own;
  own.set_csr_pem(GenerateKeyAndCsr("fs01")->csr_pem);
  auto renewed = api_->RenewCertificate(Agent("fs01"), "1a", "", own);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(IdentityFromPem(renewed->certificate_pem())->name, "fs01");
  auto certs = store_.ListCertificates("fs01", false, kNow);
  ASSERT_EQ(certs->size(), 1u);
  EXPECT_EQ((*certs)[0].enrollment_token_id(), "");

  v1::RenewCertificateRequest other;
  other.set_csr_pem(GenerateKeyAndCsr("fs02")->csr_pem);
  auto refused = api_->RenewCertificate(Agent("fs01"), "1a", "", other);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("is not the host name 'fs01'"));
  EXPECT_EQ(api_->RenewCertificate(Anonymous(), "", "", own).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(EnrollmentApiNoCaTest, WithoutAnIssuingCaEnrollIsUnimplemented) {
  MemoryEnrollmentStore store;
  EnrollmentApi api(&store, nullptr);
  v1::EnrollRequest r;
  EXPECT_EQ(api.Enroll(Anonymous(), r).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace smbfleet::collector
