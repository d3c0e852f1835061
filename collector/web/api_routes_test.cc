#include "collector/web/api_routes.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;

Principal Viewer() {
  Principal p;
  p.name = "alice";
  p.kind = PrincipalKind::kOperator;
  p.kind_text = "operator";
  p.roles = {"viewer"};
  p.token_id = "0123456789abcdef";
  return p;
}

const google::protobuf::ServiceDescriptor* AdminService() {
  return google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      "smbfleet.v1.AdminService");
}

// A new RPC cannot be forgotten: every AdminService method has a route, with the method's own
// request and response types, and the table has nothing else.
TEST(ApiRoutesTest, EveryAdminServiceMethodIsRoutedWithItsTypes) {
  AdminApi api(nullptr, nullptr, nullptr);
  ApiRoutes routes(&api, nullptr);
  const google::protobuf::ServiceDescriptor* service = AdminService();
  ASSERT_NE(service, nullptr);
  std::set<std::string> methods;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* m = service->method(i);
    methods.insert(m->name());
    const ApiRoute* route = routes.Find(m->name());
    ASSERT_NE(route, nullptr) << m->name() << " has no route in collector/web/api_routes.cc";
    EXPECT_EQ(route->request, m->input_type()) << m->name();
    EXPECT_EQ(route->response, m->output_type()) << m->name();
  }
  for (const std::string& name : routes.Names()) {
    EXPECT_TRUE(methods.count(name)) << name << " is routed but is no AdminService method";
  }
}

TEST(ApiRoutesTest, CallsTheApiWithTheCallerAndAnswersProtobufJson) {
  AdminApi api(nullptr, nullptr, nullptr);
  ApiRoutes routes(&api, nullptr);
  absl::StatusOr<std::string> out = routes.Find("WhoAmI")->call(Viewer(), "{}");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, R"({"name":"alice","kind":"operator","roles":["viewer"],"credential":"token",)"
                  R"("credentialId":"0123456789abcdef"})");
  // An empty body is the empty request.
  EXPECT_TRUE(routes.Find("WhoAmI")->call(Viewer(), "").ok());
}

TEST(ApiRoutesTest, MalformedJsonNamesTheBody) {
  AdminApi api(nullptr, nullptr, nullptr);
  ApiRoutes routes(&api, nullptr);
  absl::StatusOr<std::string> out = routes.Find("GetHost")->call(Viewer(), "{\"host\":");
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("request body"));
  out = routes.Find("GetHost")->call(Viewer(), R"({"noSuchField":1})");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ApiRoutesTest, TheApiAuthorizesEachCall) {
  AdminApi api(nullptr, nullptr, nullptr);
  ApiRoutes routes(&api, nullptr);
  absl::StatusOr<std::string> out =
      routes.Find("ApproveChange")->call(Viewer(), R"({"id":"CHG-1"})");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kPermissionDenied) << out.status();
  out = routes.Find("GetApproverSet")->call(Principal::Anonymous(), "{}");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnauthenticated) << out.status();
}

TEST(ApiRoutesTest, UnknownRpcHasNoRoute) {
  AdminApi api(nullptr, nullptr, nullptr);
  ApiRoutes routes(&api, nullptr);
  EXPECT_EQ(routes.Find("DropDatabase"), nullptr);
  EXPECT_EQ(routes.Find("listHosts"), nullptr);
}

}  // namespace
}  // namespace smbfleet::collector
