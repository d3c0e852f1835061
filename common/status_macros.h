#ifndef SMBFLEET_COMMON_STATUS_MACROS_H_
#define SMBFLEET_COMMON_STATUS_MACROS_H_

// Early returns for absl::Status and absl::StatusOr, header-only so that pure libraries
// (policy/) use them without linking anything.
//
//   RETURN_IF_ERROR(WriteFile(path, text));
//   ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//   ASSIGN_OR_RETURN(auto parsed, Parse(text));

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace smbfleet::status_internal {

inline const absl::Status& AsStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace smbfleet::status_internal

#define SMBFLEET_STATUS_CONCAT_INNER_(a, b) a##b
#define SMBFLEET_STATUS_CONCAT_(a, b) SMBFLEET_STATUS_CONCAT_INNER_(a, b)

// Returns the error of a Status or StatusOr expression from the enclosing function.
#define RETURN_IF_ERROR(expr)                                         \
  do {                                                                \
    const auto& smbfleet_status_ = (expr);                            \
    if (!smbfleet_status_.ok()) {                                     \
      return ::smbfleet::status_internal::AsStatus(smbfleet_status_); \
    }                                                                 \
  } while (false)

// Declares or assigns lhs from a StatusOr expression, or returns its error.
// NOLINTBEGIN(bugprone-macro-parentheses): lhs is a declaration and statusor a name, not values.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  SMBFLEET_ASSIGN_OR_RETURN_IMPL_(SMBFLEET_STATUS_CONCAT_(smbfleet_statusor_, __LINE__), lhs, rexpr)

#define SMBFLEET_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = *std::move(statusor)
// NOLINTEND(bugprone-macro-parentheses)

#endif  // SMBFLEET_COMMON_STATUS_MACROS_H_
