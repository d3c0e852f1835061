#include "collector/push/stream_registry.h"

#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {

StreamRegistry::StreamRegistry(std::chrono::milliseconds keepalive_interval)
    : keepalive_interval_(keepalive_interval), keepalive_thread_([this] { KeepaliveLoop(); }) {}

StreamRegistry::~StreamRegistry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  keepalive_thread_.join();
}

void StreamRegistry::Register(const std::string& host, AgentStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second != stream) {
    it->second->Close("replaced by a newer stream from the same host");
  }
  streams_[host] = stream;
}

void StreamRegistry::Unregister(const std::string& host, AgentStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second == stream) streams_.erase(it);
}

bool StreamRegistry::Send(const std::string& host, const smbfleet::v1::WatchResponse& message) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(host);
  if (it == streams_.end()) return false;
  it->second->Send(message);
  return true;
}

bool StreamRegistry::Connected(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.count(host) > 0;
}

size_t StreamRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

void StreamRegistry::CloseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [host, stream] : streams_) stream->Close("collector shutting down");
}

void StreamRegistry::KeepaliveLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, keepalive_interval_, [this] { return stopping_; });
    if (stopping_) break;
    smbfleet::v1::WatchResponse ping;
    *ping.mutable_keepalive()->mutable_sent_at() =
        google::protobuf::util::TimeUtil::GetCurrentTime();
    for (auto& [host, stream] : streams_) stream->Send(ping);
  }
}

}  // namespace smbfleet::collector
