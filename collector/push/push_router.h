#ifndef SMBFLEET_COLLECTOR_PUSH_PUSH_ROUTER_H_
#define SMBFLEET_COLLECTOR_PUSH_PUSH_ROUTER_H_

// Sends messages down agents' Watch streams. The local StreamRegistry reaches the streams open
// on this collector; a router across replicas (PostgreSQL LISTEN/NOTIFY) implements the same.

#include <string>

#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

class PushRouter {
 public:
  virtual ~PushRouter() = default;
  // True when the message was handed to an open stream of that host.
  virtual bool Send(const std::string& host, const smbfleet::v1::WatchResponse& message) = 0;
  virtual bool Connected(const std::string& host) const = 0;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_PUSH_PUSH_ROUTER_H_
