#include "agent/core/testing/fake_collector_client.h"

#include <utility>

#include "common/posture_digest.h"

namespace smbfleet::agent::testing {

absl::StatusOr<smbfleet::v1::ReportResponse> FakeCollectorClient::Report(
    const smbfleet::v1::ReportRequest& request) {
  std::function<void(const smbfleet::v1::ReportRequest&)> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = on_report_;
  }
  if (hook) hook(request);
  absl::Status answer;
  smbfleet::v1::ReportResponse response;
  response.set_host(request.posture().host().hostname());
  response.set_outcome(smbfleet::v1::ReportResponse::OUTCOME_STORED);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reports_.push_back(request);
    if (!answers_.empty()) {
      answer = answers_.front();
      answers_.pop_front();
    }
    if (answer.ok() && digest_reports_) {
      response.set_digest_reports(true);
      if (!request.has_posture()) {
        response.set_outcome(request.posture_digest() == known_digest_
                                 ? smbfleet::v1::ReportResponse::OUTCOME_UNCHANGED
                                 : smbfleet::v1::ReportResponse::OUTCOME_SEND_FULL);
      } else {
        known_digest_ = PostureDigest(request.posture());
      }
    }
  }
  cv_.notify_all();
  if (!answer.ok()) return answer;
  return response;
}

absl::Status FakeCollectorClient::Watch(const smbfleet::v1::WatchRequest& request,
                                        const WatchCallback& on_message) {
  Clock::TimePoint now = clock_->Now();
  std::unique_lock<std::mutex> lock(mu_);
  watch_requests_.push_back(request);
  watch_times_.push_back(now);
  watch_thread_ = std::this_thread::get_id();
  cv_.notify_all();
  while (true) {
    if (cancelled_) return absl::CancelledError("watch cancelled");
    if (end_at_once_) return absl::UnavailableError("watch stream: connection refused");
    if (!pending_.empty()) {
      smbfleet::v1::WatchResponse m = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      on_message(m);
      lock.lock();
      continue;
    }
    if (end_requests_ > 0) {
      --end_requests_;
      return absl::UnavailableError("watch stream: ended by the collector");
    }
    cv_.wait(lock);
  }
}

void FakeCollectorClient::CancelWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

absl::Status FakeCollectorClient::AckChange(const smbfleet::v1::AckChangeRequest& request) {
  absl::Status answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    acks_.push_back(request);
    if (!ack_answers_.empty()) {
      answer = ack_answers_.front();
      ack_answers_.pop_front();
    }
  }
  cv_.notify_all();
  return answer;
}

void FakeCollectorClient::ScriptAcks(std::vector<absl::Status> answers) {
  std::lock_guard<std::mutex> lock(mu_);
  ack_answers_.assign(answers.begin(), answers.end());
}

std::vector<smbfleet::v1::AckChangeRequest> FakeCollectorClient::acks() {
  std::lock_guard<std::mutex> lock(mu_);
  return acks_;
}

bool FakeCollectorClient::AwaitAcks(size_t n, std::chrono::milliseconds real_timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, real_timeout,
                      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return acks_.size() >= n; });
}

std::vector<smbfleet::v1::WatchRequest> FakeCollectorClient::watch_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_requests_;
}

void FakeCollectorClient::ScriptReports(std::vector<absl::Status> answers) {
  std::lock_guard<std::mutex> lock(mu_);
  answers_.assign(answers.begin(), answers.end());
}

void FakeCollectorClient::set_digest_reports(bool v) {
  std::lock_guard<std::mutex> lock(mu_);
  digest_reports_ = v;
}

void FakeCollectorClient::OnReport(std::function<void(const smbfleet::v1::ReportRequest&)> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  on_report_ = std::move(hook);
}

std::vector<smbfleet::v1::ReportRequest> FakeCollectorClient::reports() {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

bool FakeCollectorClient::AwaitReports(size_t n, std::chrono::milliseconds real_timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, real_timeout,
                      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return reports_.size() >= n; });
}

void FakeCollectorClient::set_end_watch_at_once(bool v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    end_at_once_ = v;
  }
  cv_.notify_all();
}

void FakeCollectorClient::SendWatch(const smbfleet::v1::WatchResponse& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(message);
  }
  cv_.notify_all();
}

void FakeCollectorClient::EndWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++end_requests_;
  }
  cv_.notify_all();
}

bool FakeCollectorClient::AwaitWatchCalls(size_t n, std::chrono::milliseconds real_timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, real_timeout,
                      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return watch_times_.size() >= n; });
}

std::vector<Clock::TimePoint> FakeCollectorClient::watch_times() {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_times_;
}

std::thread::id FakeCollectorClient::watch_thread() {
  std::lock_guard<std::mutex> lock(mu_);
  return watch_thread_;
}

}  // namespace smbfleet::agent::testing
