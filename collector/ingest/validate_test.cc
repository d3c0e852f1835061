#include "collector/ingest/validate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

smbfleet::v1::ReportRequest Valid() {
  smbfleet::v1::ReportRequest r;
  r.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
  r.mutable_posture()->mutable_host()->set_hostname("fs01");
  r.mutable_posture()->add_shares()->set_name("data");
  return r;
}

TEST(ValidateReportTest, AcceptsValid) { EXPECT_TRUE(ValidateReport(Valid()).ok()); }

TEST(ValidateReportTest, RejectsBadReportId) {
  auto r = Valid();
  r.set_report_id("'; DROP TABLE hosts; --");
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("reportId"));
}

TEST(ValidateReportTest, NamesOversizedShareName) {
  auto r = Valid();
  r.mutable_posture()->add_shares()->set_name(std::string(300, 'x'));
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.shares[1].name: 300 bytes, limit 255"));
}

TEST(ValidateReportTest, ListsSeveralProblems) {
  auto r = Valid();
  r.set_report_id("x");
  r.mutable_posture()->add_shares();  // empty name
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("reportId"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.shares[1].name: empty"));
}

TEST(ValidateReportTest, MissingPosture) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
  EXPECT_THAT(std::string(ValidateReport(r).message()), HasSubstr("posture: missing"));
}

TEST(IsUuidTest, Shapes) {
  EXPECT_TRUE(IsUuid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
  EXPECT_FALSE(IsUuid("0f8fad5bd9cb469fa16570867728950e"));
  EXPECT_FALSE(IsUuid("0f8fad5b-d9cb-469f-a165-70867728950g"));
}

}  // namespace
}  // namespace smbfleet::collector
