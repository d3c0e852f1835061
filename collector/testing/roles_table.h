#ifndef SMBFLEET_COLLECTOR_TESTING_ROLES_TABLE_H_
#define SMBFLEET_COLLECTOR_TESTING_ROLES_TABLE_H_

// The role matrix of docs/roles.md, parsed, so that tests can hold the code (unit) and the
// running collector (over TLS) to the table people read.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet::collector::testing {

// The principal columns of the table, in order.
const std::vector<std::string>& RolesTableColumns();  // viewer ... anonymous

struct RolesTableRow {
  std::string method;                   // "AdminService.ListHosts"
  std::string permission;               // "read-fleet"
  std::map<std::string, bool> allowed;  // by column
};

// The table under the "| RPC | permission | viewer |" header: every cell "yes" or "no".
// INVALID_ARGUMENT naming the line for anything else.
absl::StatusOr<std::vector<RolesTableRow>> ParseRolesTable(absl::string_view markdown);
// docs/roles.md of this source tree.
absl::StatusOr<std::vector<RolesTableRow>> LoadRolesTable();

}  // namespace smbfleet::collector::testing

#endif  // SMBFLEET_COLLECTOR_TESTING_ROLES_TABLE_H_
