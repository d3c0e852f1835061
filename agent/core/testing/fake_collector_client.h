#ifndef SMBFLEET_AGENT_CORE_TESTING_FAKE_COLLECTOR_CLIENT_H_
#define SMBFLEET_AGENT_CORE_TESTING_FAKE_COLLECTOR_CLIENT_H_

// A CollectorClient in memory: Report and AckChange answer from a script (OK by default) and
// record what they got; Watch streams hold open until the test sends messages or ends them. Tests
// block on it, without sleeping, until the agent has made a given number of calls.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "agent/core/clock.h"
#include "agent/core/transport.h"

namespace smbfleet::agent::testing {

class FakeCollectorClient : public CollectorClient {
 public:
  // `clock` (not owned) stamps the Watch calls.
  explicit FakeCollectorClient(Clock* clock) : clock_(clock) {}

  absl::StatusOr<smbfleet::v1::ReportResponse> Report(
      const smbfleet::v1::ReportRequest& request) override;
  absl::Status Watch(const smbfleet::v1::WatchRequest& request,
                     const WatchCallback& on_message) override;
  void CancelWatch() override;
  absl::Status AckChange(const smbfleet::v1::AckChangeRequest& request) override;

  // With digest reports on, OK answers act as a collector taking digest-only reports does: it
  // remembers the digest of the last full report, answers a digest-only report UNCHANGED when
  // it is that digest and SEND_FULL when not, and says digest_reports. Off by default.
  void set_digest_reports(bool v);
  // The answers to the next Report calls, in order; OK once they are used up.
  void ScriptReports(std::vector<absl::Status> answers);
  // Runs inside Report before it answers (e.g. to look at the spool).
  void OnReport(std::function<void(const smbfleet::v1::ReportRequest&)> hook);
  // Reports received (answered OK or not), oldest first.
  std::vector<smbfleet::v1::ReportRequest> reports();
  bool AwaitReports(size_t n, std::chrono::milliseconds real_timeout = std::chrono::seconds(20));

  // The answers to the next AckChange calls, in order; OK once they are used up.
  void ScriptAcks(std::vector<absl::Status> answers);
  // Acks received (answered OK or not), oldest first.
  std::vector<smbfleet::v1::AckChangeRequest> acks();
  bool AwaitAcks(size_t n, std::chrono::milliseconds real_timeout = std::chrono::seconds(20));
  // The requests the Watch calls opened their streams with.
  std::vector<smbfleet::v1::WatchRequest> watch_requests();

  // Watch streams end at once with Unavailable (true) or stay open until EndWatch() (false).
  void set_end_watch_at_once(bool v);
  void SendWatch(const smbfleet::v1::WatchResponse& message);
  void EndWatch();
  bool AwaitWatchCalls(size_t n, std::chrono::milliseconds real_timeout = std::chrono::seconds(20));
  // When each Watch call started (clock time), and on which thread the last one ran.
  std::vector<Clock::TimePoint> watch_times();
  std::thread::id watch_thread();

 private:
  Clock* clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::Status> answers_ ABSL_GUARDED_BY(mu_);
  std::function<void(const smbfleet::v1::ReportRequest&)> on_report_ ABSL_GUARDED_BY(mu_);
  std::vector<smbfleet::v1::ReportRequest> reports_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> ack_answers_ ABSL_GUARDED_BY(mu_);
  std::vector<smbfleet::v1::AckChangeRequest> acks_ ABSL_GUARDED_BY(mu_);
  std::vector<smbfleet::v1::WatchRequest> watch_requests_ ABSL_GUARDED_BY(mu_);
  bool end_at_once_ ABSL_GUARDED_BY(mu_) = false;
  bool digest_reports_ ABSL_GUARDED_BY(mu_) = false;
  std::string known_digest_ ABSL_GUARDED_BY(mu_);
  std::deque<smbfleet::v1::WatchResponse> pending_ ABSL_GUARDED_BY(mu_);
  int end_requests_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Clock::TimePoint> watch_times_ ABSL_GUARDED_BY(mu_);
  std::thread::id watch_thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace smbfleet::agent::testing

#endif  // SMBFLEET_AGENT_CORE_TESTING_FAKE_COLLECTOR_CLIENT_H_
