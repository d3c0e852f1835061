#include "common/json.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace smbfleet {

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = false;
  // What MessageToJsonString does, but with map entries in key order (deterministic
  // serialization) rather than hash order, so that one message gives the same bytes on every run
  // and every platform.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!message.SerializeToCodedStream(&coded)) {
      return absl::InternalError(absl::StrCat("cannot serialize ", message.GetTypeName()));
    }
  }
  constexpr char kTypeUrlPrefix[] = "type.googleapis.com";
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          kTypeUrlPrefix, message.GetDescriptor()->file()->pool()));
  std::string out;
  auto status = google::protobuf::util::BinaryToJsonString(
      resolver.get(), absl::StrCat(kTypeUrlPrefix, "/", message.GetDescriptor()->full_name()),
      binary, &out, options);
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
