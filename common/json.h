#ifndef SMBFLEET_COMMON_JSON_H_
#define SMBFLEET_COMMON_JSON_H_

// The product's JSON is protobuf's JSON mapping: lowerCamelCase names, enums by name.

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace smbfleet {

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message, bool pretty = true);

// Unknown fields are an error unless ignore_unknown is set; `what` names the input in errors.
absl::Status FromJson(const std::string& json, const std::string& what,
                      google::protobuf::Message* message, bool ignore_unknown = false);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_JSON_H_
