#ifndef SMBFLEET_COLLECTOR_PUSH_WATCH_REACTOR_H_
#define SMBFLEET_COLLECTOR_PUSH_WATCH_REACTOR_H_

// The server side of one agent's Watch stream.

#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/push/stream_registry.h"
#include "grpcpp/grpcpp.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

// Registers itself for `host`, greets with a keepalive, then writes queued messages one at a
// time until the stream ends; deletes itself when gRPC is done with it.
class WatchReactor final : public grpc::ServerWriteReactor<smbfleet::v1::WatchResponse>,
                           public AgentStream {
 public:
  WatchReactor(StreamRegistry* registry, std::string host, StreamCredential credential = {});

  void Send(const smbfleet::v1::WatchResponse& message) override;
  void Close(const std::string& why) override;
  void CloseRetryLater(const std::string& why) override;

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  static constexpr size_t kMaxQueued = 64;  // a stuck agent must not grow our memory

  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamRegistry* registry_;
  const std::string host_;
  absl::Mutex mu_;
  std::deque<smbfleet::v1::WatchResponse> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_finish_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// A Watch refused before it started (e.g. not an agent's certificate).
grpc::ServerWriteReactor<smbfleet::v1::WatchResponse>* RejectWatch(grpc::Status status);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_PUSH_WATCH_REACTOR_H_
