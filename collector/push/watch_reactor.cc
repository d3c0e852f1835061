#include "collector/push/watch_reactor.h"

#include "common/logging.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

class RejectedWatch final : public grpc::ServerWriteReactor<smbfleet::v1::WatchResponse> {
 public:
  explicit RejectedWatch(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

WatchReactor::WatchReactor(StreamRegistry* registry, std::string host, StreamCredential credential)
    : registry_(registry), host_(std::move(host)) {
  registry_->Register(host_, this, std::move(credential));
  smbfleet::v1::WatchResponse hello;
  *hello.mutable_keepalive()->mutable_sent_at() =
      google::protobuf::util::TimeUtil::GetCurrentTime();
  Send(hello);
}

void WatchReactor::Send(const smbfleet::v1::WatchResponse& message) {
  absl::MutexLock lock(&mu_);
  if (finishing_ || queue_.size() >= kMaxQueued) return;
  queue_.push_back(message);
  if (!writing_) {
    writing_ = true;
    StartWrite(&queue_.front());
  }
}

void WatchReactor::Close(const std::string& why) {
  absl::MutexLock lock(&mu_);
  FinishLocked(grpc::Status(grpc::StatusCode::ABORTED, why));
}

void WatchReactor::CloseRetryLater(const std::string& why) {
  absl::MutexLock lock(&mu_);
  FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
}

void WatchReactor::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (!ok) {
    FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    return;
  }
  if (pending_finish_) {
    Finish(final_status_);
    return;
  }
  if (!queue_.empty() && !finishing_) {
    writing_ = true;
    StartWrite(&queue_.front());
  }
}

void WatchReactor::OnCancel() {
  absl::MutexLock lock(&mu_);
  FinishLocked(grpc::Status::CANCELLED);
}

void WatchReactor::OnDone() {
  registry_->Unregister(host_, this);
  Logger("collector")->info("watch stream of {} closed", LogSafe(host_));
  delete this;
}

void WatchReactor::FinishLocked(grpc::Status status) {
  if (finishing_) return;
  finishing_ = true;
  if (writing_) {
    pending_finish_ = true;
    final_status_ = std::move(status);
  } else {
    Finish(std::move(status));
  }
}

grpc::ServerWriteReactor<smbfleet::v1::WatchResponse>* RejectWatch(grpc::Status status) {
  return new RejectedWatch(std::move(status));
}

}  // namespace smbfleet::collector
