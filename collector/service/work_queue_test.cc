// The bounded work queue and the busy reply it leads to.
#include "collector/service/work_queue.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "collector/metrics/prometheus_text.h"
#include "collector/service/grpc_status.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

TEST(WorkQueueTest, FullQueueRefusesAndTheCallerSaysRetryLater) {
  absl::Notification release;
  absl::Notification started;
  std::atomic<int> ran{0};
  {
    WorkQueue queue(/*threads=*/1, /*max_pending=*/1);
    ASSERT_TRUE(queue.TrySubmit([&] {
      started.Notify();
      release.WaitForNotification();
      ++ran;
    }));
    started.WaitForNotification();  // the only thread is busy
    EXPECT_TRUE(queue.TrySubmit([&] { ++ran; }));
    EXPECT_FALSE(queue.TrySubmit([&] { ++ran; }));  // one pending is the limit
    release.Notify();
  }  // the destructor runs what was queued
  EXPECT_EQ(ran, 2);

  // Busy is "retry later" by its code alone; RESOURCE_EXHAUSTED means "too large".
  EXPECT_EQ(Busy().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(WorkQueueTest, DepthGaugeFollowsTheWaitingTasks) {
  Metrics metrics;
  auto depth = [&] { return SampleIn(metrics.Text(), "smbfleet_ingest_queue_depth"); };
  absl::Notification release;
  absl::Notification started;
  {
    WorkQueue queue(/*threads=*/1, /*max_pending=*/5, &metrics);
    ASSERT_TRUE(queue.TrySubmit([&] {
      started.Notify();
      release.WaitForNotification();
    }));
    started.WaitForNotification();  // taken off the queue: running, not waiting
    EXPECT_EQ(depth(), 0);
    ASSERT_TRUE(queue.TrySubmit([] {}));
    ASSERT_TRUE(queue.TrySubmit([] {}));
    EXPECT_EQ(depth(), 2);
    release.Notify();
  }  // the destructor runs what was queued
  EXPECT_EQ(depth(), 0);
}

TEST(ToGrpcStatusTest, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  auto s = ToGrpcStatus(absl::NotFoundError("no host named 'x'"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no host named 'x'");
}

}  // namespace
}  // namespace smbfleet::collector
