#ifndef SMBFLEET_COLLECTOR_PUSH_STREAM_REGISTRY_H_
#define SMBFLEET_COLLECTOR_PUSH_STREAM_REGISTRY_H_

// The agents' open Watch streams on this collector, by host name: the local PushRouter.

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "collector/metrics/metrics.h"
#include "collector/push/push_router.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

// One open stream. Implementations must be safe to call from any thread until Unregister.
class AgentStream {
 public:
  virtual ~AgentStream() = default;
  virtual void Send(const smbfleet::v1::WatchResponse& message) = 0;
  // Ends the stream, e.g. because the same host opened a newer one.
  virtual void Close(const std::string& why) = 0;
  // Ends the stream so that the agent reconnects after its backoff (the collector is stopping):
  // UNAVAILABLE rather than Close's ABORTED.
  virtual void CloseRetryLater(const std::string& why) { Close(why); }
};

// The certificate a stream was opened with (lower-case hex), so that revoking it closes the
// stream.
struct StreamCredential {
  std::string serial;
  std::string fingerprint;
};

class StreamRegistry : public PushRouter {
 public:
  // Every stream gets a keepalive message at this interval. `metrics` (may be null) gets the
  // number of open streams.
  explicit StreamRegistry(std::chrono::milliseconds keepalive_interval, Metrics* metrics = nullptr);
  ~StreamRegistry() override;

  // A newer stream of the same host replaces (and closes) the older one: the agent only opens
  // one, so a second means the first is dead on its side (e.g. a NAT dropped it) and refusing it
  // would keep that host without orders until keepalives noticed. After CloseAll a new stream
  // is closed at once (retry later).
  void Register(const std::string& host, AgentStream* stream, StreamCredential credential = {});
  // Only removes the entry when it is still this stream.
  void Unregister(const std::string& host, AgentStream* stream);

  bool Send(const std::string& host, const smbfleet::v1::WatchResponse& message) override;
  bool Connected(const std::string& host) const override;
  // Sends to every open stream; returns how many.
  size_t SendAll(const smbfleet::v1::WatchResponse& message);
  size_t size() const;
  // Closes every stream, and every one registered after, with CloseRetryLater (at shutdown).
  void CloseAll();
  // Closes the streams whose host or certificate `revoked(host, serial, fingerprint)` says is
  // revoked; returns how many.
  size_t CloseRevoked(const std::function<bool(const std::string& host, const std::string& serial,
                                               const std::string& fingerprint)>& revoked);

 private:
  void KeepaliveLoop();
  void CountStreams() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (metrics_ != nullptr) metrics_->SetAgentsConnected(streams_.size());
  }

  const std::chrono::milliseconds keepalive_interval_;
  Metrics* const metrics_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // CloseAll was called
  // A hash map: a change order for one host costs one lookup, however many streams are open.
  absl::flat_hash_map<std::string, AgentStream*> streams_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<AgentStream*, StreamCredential> credentials_ ABSL_GUARDED_BY(mu_);
  std::thread keepalive_thread_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_PUSH_STREAM_REGISTRY_H_
