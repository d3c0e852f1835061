// One datagram of a sock_diag (SOCK_DIAG_BY_FAMILY) dump reply, as the kernel would send it.

#include "agent/platform/posix/sock_diag.h"

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto chunk = smbfleet::agent::posix::ParseSockDiagReply(bytes, {445, 139});
  if (chunk.ok()) {
    size_t n = 0;
    for (const auto& c : chunk->connections) {
      n += c.local_address.size() + c.remote_address.size();
      n += c.rtt_us.value_or(0) + c.min_rtt_us.value_or(0);
    }
    (void)n;
  }
  return 0;
}
