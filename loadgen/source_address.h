#ifndef SMBFLEET_LOADGEN_SOURCE_ADDRESS_H_
#define SMBFLEET_LOADGEN_SOURCE_ADDRESS_H_

// Each simulated agent connects from its own loopback address, so that 100,000 connections to one
// collector port do not run out of ephemeral ports (about 28,000 per source address).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/support/channel_arguments.h"

namespace smbfleet::loadgen {

// The `index`th source address: 127.1.0.1 upwards, skipping the .0 and .255 host octets.
// OutOfRange past 127.255.255.254.
absl::StatusOr<std::string> SourceAddress(int64_t index);

// Makes every client connection of the channel built with `args` bind to `ipv4` (a dotted quad)
// before it connects. InvalidArgument naming the text if it is not one.
absl::Status BindSourceAddress(const std::string& ipv4, grpc::ChannelArguments& args);

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_SOURCE_ADDRESS_H_
