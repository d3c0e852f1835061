#include "cli/render.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RenderTest, HostShowsSessionsPerShareWithDialect) {
  smbfleet::v1::GetHostResponse h;
  h.mutable_summary()->set_name("fs01");
  auto* s = h.mutable_posture()->add_sessions();
  s->set_session_id("7");
  s->set_user("alice");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  s->set_cipher(smbfleet::v1::AES_256_GCM);
  auto* sc = s->add_shares();
  sc->set_name("finance");
  sc->set_signing(smbfleet::v1::PROTECTION_FULL);
  sc->set_encryption(smbfleet::v1::PROTECTION_NONE);
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(), HasSubstr("SMB 2.1"));
  EXPECT_THAT(out.str(), HasSubstr("finance"));
  EXPECT_THAT(out.str(), HasSubstr("AES-256-GCM"));
  EXPECT_THAT(out.str(), HasSubstr("signing required    unknown"));
}

TEST(RenderTest, HostShowsEachSharesClassification) {
  smbfleet::v1::GetHostResponse h;
  auto* hr = h.mutable_posture()->add_shares();
  hr->set_name("HR");
  hr->set_path("/srv/hr");
  hr->set_classification("pii");
  auto* pub = h.mutable_posture()->add_shares();
  pub->set_name("public");
  pub->set_path("/srv/public");
  std::ostringstream out;
  RenderHost(h, out);
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("HR +/srv/hr +unknown +pii"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("public +/srv/public +unknown +-"));
}

TEST(RenderTest, ControlCharactersAreEscaped) {
  smbfleet::v1::ListHostsResponse hosts;
  hosts.add_hosts()->set_name("evil\x1b[2Jname");
  std::ostringstream out;
  RenderHostTable(hosts, out);
  EXPECT_THAT(out.str(), HasSubstr("evil\\x1b[2Jname"));
  EXPECT_THAT(out.str(), Not(HasSubstr("\x1b")));
}

}  // namespace
}  // namespace smbfleet::cli
