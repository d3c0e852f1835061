#include "collector/push/stream_registry.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {

StreamRegistry::StreamRegistry(std::chrono::milliseconds keepalive_interval, Metrics* metrics)
    : keepalive_interval_(keepalive_interval),
      metrics_(metrics),
      keepalive_thread_([this] { KeepaliveLoop(); }) {}

StreamRegistry::~StreamRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  keepalive_thread_.join();
}

void StreamRegistry::Register(const std::string& host, AgentStream* stream,
                              StreamCredential credential) {
  absl::MutexLock lock(&mu_);
  if (closing_) {
    stream->CloseRetryLater("collector shutting down");
    return;
  }
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second != stream) {
    it->second->Close("replaced by a newer stream from the same host");
    credentials_.erase(it->second);
  }
  streams_[host] = stream;
  credentials_[stream] = std::move(credential);
  CountStreams();
}

void StreamRegistry::Unregister(const std::string& host, AgentStream* stream) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(host);
  if (it != streams_.end() && it->second == stream) streams_.erase(it);
  credentials_.erase(stream);
  CountStreams();
}

size_t StreamRegistry::CloseRevoked(
    const std::function<bool(const std::string& host, const std::string& serial,
                             const std::string& fingerprint)>& revoked) {
  absl::MutexLock lock(&mu_);
  size_t closed = 0;
  for (auto& [host, stream] : streams_) {
    auto c = credentials_.find(stream);
    if (c == credentials_.end()) continue;
    if (c->second.serial.empty() && c->second.fingerprint.empty()) continue;
    if (!revoked(host, c->second.serial, c->second.fingerprint)) continue;
    stream->Close(
        absl::StrCat("certificate ", c->second.serial, " of host ", host, " has been revoked"));
    ++closed;
  }
  return closed;
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
  closing_ = true;
  for (auto& [host, stream] : streams_) stream->CloseRetryLater("collector shutting down");
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
