#ifndef SMBFLEET_COLLECTOR_WEB_API_ROUTES_H_
#define SMBFLEET_COLLECTOR_WEB_API_ROUTES_H_

// The console's JSON API as one table: AdminService RPC name -> a handler that parses the
// request message from protobuf JSON, calls the AdminApi member (which authorizes the caller
// itself) and prints the response message as protobuf JSON. No schema of its own.

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/admin/admin_api.h"
#include "collector/auth/authorize.h"
#include "collector/trust/approver_sets.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"

namespace smbfleet::collector {

struct ApiRoute {
  // JSON request body in, JSON response body out; INVALID_ARGUMENT naming the body when it is
  // not the request message.
  std::function<absl::StatusOr<std::string>(const Principal&, const std::string&)> call;
  const google::protobuf::Descriptor* request = nullptr;
  const google::protobuf::Descriptor* response = nullptr;
};

// One route of the table: binds the request and response types of `call` (a callable taking
// the principal and the request) to JSON.
template <typename Request, typename Response, typename Call>
ApiRoute JsonRoute(Call call) {
  ApiRoute route;
  route.request = Request::descriptor();
  route.response = Response::descriptor();
  route.call = [call = std::move(call)](const Principal& caller,
                                        const std::string& body) -> absl::StatusOr<std::string> {
    Request request;
    RETURN_IF_ERROR(FromJson(body.empty() ? "{}" : body, "request body", &request));
    ASSIGN_OR_RETURN(Response response, call(caller, request));
    return ToJson(response, /*pretty=*/false);
  };
  return route;
}

// JsonRoute of an AdminApi member.
template <typename Request, typename Response>
ApiRoute AdminRoute(AdminApi* api, absl::StatusOr<Response> (AdminApi::*member)(const Principal&,
                                                                                const Request&)) {
  return JsonRoute<Request, Response>(
      [api, member](const Principal& caller, const Request& request) {
        return (api->*member)(caller, request);
      });
}

class ApiRoutes {
 public:
  // Not owned. `approver_sets` may be null: Publish/GetApproverSet answer UNAVAILABLE.
  ApiRoutes(AdminApi* api, ApproverSets* approver_sets);

  // Null for an unknown RPC name.
  const ApiRoute* Find(absl::string_view rpc) const;
  std::vector<std::string> Names() const;

 private:
  absl::flat_hash_map<std::string, ApiRoute> routes_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_WEB_API_ROUTES_H_
