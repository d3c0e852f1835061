#include "common/json.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace smbfleet {

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = false;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot render ", message.GetTypeName(), " as JSON: ", status.ToString()));
  }
  if (pretty && (out.empty() || out.back() != '\n')) out.push_back('\n');
  return out;
}

absl::Status FromJson(const std::string& json, const std::string& what,
                      google::protobuf::Message* message, bool ignore_unknown) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = ignore_unknown;
  auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a valid ", message->GetTypeName(),
                                                   " in JSON: ", status.message().as_string()));
  }
  return absl::OkStatus();
}

}  // namespace smbfleet
