#include "collector/push/stream_registry.h"

#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {

StreamRegistry::StreamRegistry(std::chrono::milliseconds keepalive_interval)
    : keepalive_interval_(keepalive_interval), keepalive_thread_([this] { KeepaliveLoop(); }) {}

StreamRegistry::~StreamRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  keepalive_thread_.join();
}

void StreamRegistry::Register(const std::string& host, AgentStream* stream) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second != stream) {
    it->second->Close("replaced by a newer stream from the same host");
  }
  streams_[host] = stream;
}

void StreamRegistry::Unregister(const std::string& host, AgentStream* stream) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second == stream) streams_.erase(it);
}

bool StreamRegistry::Send(const std::string& host, const smbfleet::v1::WatchResponse& message) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(host);
  if (it == streams_.end()) return false;
  it->second->Send(message);
  return true;
}

bool StreamRegistry::Connected(const std::string& host) const {
  absl::MutexLock lock(&mu_);
  return streams_.count(host) > 0;
}

size_t StreamRegistry::SendAll(const smbfleet::v1::WatchResponse& message) {
  absl::MutexLock lock(&mu_);
  for (auto& [host, stream] : streams_) stream->Send(message);
  return streams_.size();
}

size_t StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

void StreamRegistry::CloseAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [host, stream] : streams_) stream->Close("collector shutting down");
}

void StreamRegistry::KeepaliveLoop() {
  absl::MutexLock lock(&mu_);
  const absl::Duration interval = absl::FromChrono(keepalive_interval_);
  while (true) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval);
    if (stopping_) return;
    smbfleet::v1::WatchResponse ping;
    *ping.mutable_keepalive()->mutable_sent_at() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    for (auto& [host, stream] : streams_) stream->Send(ping);
  }
}

}  // namespace smbfleet::collector
