// The authorization table against the RPCs that exist and against docs/roles.md.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "collector/auth/authorize.h"
#include "collector/testing/roles_table.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.pb.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {
namespace {

constexpr const char* kServices[] = {"smbfleet.v1.AdminService", "smbfleet.v1.AgentService",
                                     "smbfleet.v1.EnrollmentService"};

std::set<std::string> MethodsOfTheServices() {
  // Referencing the generated messages links their files into the generated pool.
  (void)smbfleet::v1::ListHostsRequest::descriptor();
  (void)smbfleet::v1::ReportRequest::descriptor();
  std::set<std::string> methods;
  for (const char* name : kServices) {
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    EXPECT_NE(service, nullptr) << name;
    if (service == nullptr) continue;
    for (int i = 0; i < service->method_count(); ++i) {
      methods.insert(service->method(i)->full_name());
    }
  }
  return methods;
}

// A new RPC without a row in the table fails here, so that it cannot ship without a decision on
// who may call it (and the docs and the TLS matrix test, which follow the table, cover it).
TEST(RolesTableTest, EveryMethodOfEveryServiceHasAPermission) {
  std::set<std::string> methods = MethodsOfTheServices();
  ASSERT_GT(methods.size(), 30u);
  for (const std::string& m : methods) {
    EXPECT_TRUE(PermissionOfMethod(m).ok()) << m << " has no entry in kMethods (authorize.cc)";
  }
  for (const MethodPermission& m : MethodPermissions()) {
    EXPECT_EQ(methods.count(std::string(m.method)), 1u) << m.method << " is not an RPC";
  }
  auto missing = PermissionOfMethod("smbfleet.v1.AdminService.DropFleet");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("DropFleet"));
}

// What a certificate says: name (CN), kind (first OU), role (second OU).
PeerIdentity Id(const std::string& name, const std::string& kind, const std::string& role) {
  PeerIdentity id;
  id.name = name;
  id.common_name = name;
  id.kind = kind;
  id.role = role;
  return id;
}

// One principal per column of docs/roles.md.
Principal PrincipalOfColumn(const std::string& column) {
  if (column == "agent") return PrincipalFromIdentity(Id("fs01", "agent", ""));
  if (column == "anonymous") return Principal::Anonymous();
  if (column == "no role") return PrincipalFromIdentity(Id("nora", "operator", ""));
  return PrincipalFromIdentity(Id("olga", "operator", column));
}

TEST(RolesTableTest, TheDocsShowTheTableOfTheCode) {
  auto table = testing::LoadRolesTable();
  ASSERT_TRUE(table.ok()) << table.status();
  std::set<std::string> documented;
  for (const testing::RolesTableRow& row : *table) {
    const std::string method = absl::StrCat("smbfleet.v1.", row.method);
    EXPECT_TRUE(documented.insert(method).second) << row.method << " is listed twice";
    auto permission = PermissionOfMethod(method);
    ASSERT_TRUE(permission.ok()) << permission.status();
    EXPECT_EQ(row.permission, PermissionName(*permission)) << row.method;
    for (const std::string& column : testing::RolesTableColumns()) {
      bool granted = Authorize(PrincipalOfColumn(column), *permission).ok();
      EXPECT_EQ(row.allowed.at(column), granted)
          << "docs/roles.md says " << row.method << " is " << (row.allowed.at(column) ? "" : "not ")
          << "open to " << column << ", the code says the opposite";
    }
  }
  for (const MethodPermission& m : MethodPermissions()) {
    EXPECT_EQ(documented.count(std::string(m.method)), 1u) << m.method << " missing from the doc";
  }
}

TEST(RolesTableTest, TheParserRefusesWhatItCannotRead) {
  const std::string header =
      "| RPC | permission | viewer | proposer | approver | admin | no role | agent | anonymous |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  auto ok = testing::ParseRolesTable(
      header + "| `AdminService.X` | x | yes | no | no | no | no | no | no |\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].method, "AdminService.X");
  EXPECT_TRUE((*ok)[0].allowed.at("viewer"));
  EXPECT_FALSE((*ok)[0].allowed.at("anonymous"));
  auto maybe = testing::ParseRolesTable(
      header + "| AdminService.X | x | yes | maybe | no | no | no | no | no |\n");
  EXPECT_TRUE(absl::IsInvalidArgument(maybe.status()));
  EXPECT_THAT(std::string(maybe.status().message()), ::testing::HasSubstr("'proposer' is 'maybe'"));
  EXPECT_FALSE(testing::ParseRolesTable("no table here\n").ok());
}

}  // namespace
}  // namespace smbfleet::collector
