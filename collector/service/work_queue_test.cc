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

// Before: only the count was bounded; a few huge reports could pile up any amount of memory.
TEST(WorkQueueTest, QueueOverItsByteBoundAnswersBusy) {
  absl::Notification release;
  absl::Notification started;
  {
    WorkQueue queue(/*threads=*/1, /*max_pending=*/100, nullptr, /*max_pending_bytes=*/1000);
    ASSERT_EQ(queue.Submit([&] {
      started.Notify();
      release.WaitForNotification();
    }),
              WorkQueue::Submitted::kQueued);
    started.WaitForNotification();  // running: its bytes no longer count
    EXPECT_EQ(queue.Submit([] {}, 600), WorkQueue::Submitted::kQueued);
    EXPECT_EQ(queue.Submit([] {}, 300), WorkQueue::Submitted::kQueued);
    EXPECT_EQ(queue.Submit([] {}, 200), WorkQueue::Submitted::kFull);    // 1100 > 1000
    EXPECT_EQ(queue.Submit([] {}, 100), WorkQueue::Submitted::kQueued);  // exactly 1000
    release.Notify();
  }
  // Alone, a task over the bound still runs (a report under max_report_bytes is never refused
  // for its size alone).
  WorkQueue queue(/*threads=*/1, /*max_pending=*/100, nullptr, /*max_pending_bytes=*/10);
  absl::Notification ran;
  EXPECT_EQ(queue.Submit([&] { ran.Notify(); }, 50), WorkQueue::Submitted::kQueued);
  ran.WaitForNotification();
}

// Before: shutdown waited for every queued task, however long the database took. Drain runs
// what it can until the deadline and answers the rest through `dropped`.
TEST(WorkQueueTest, DrainDropsWhatDidNotStartByTheDeadline) {
  absl::Notification release;
  absl::Notification started;
  std::atomic<int> ran{0}, dropped{0};
  WorkQueue queue(/*threads=*/1, /*max_pending=*/100);
  ASSERT_EQ(queue.Submit([&] {
    started.Notify();
    release.WaitForNotification();  // stuck, like a call on a frozen database
    ++ran;
  }),
            WorkQueue::Submitted::kQueued);
  started.WaitForNotification();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(queue.Submit([&] { ++ran; }, 10, [&] { ++dropped; }), WorkQueue::Submitted::kQueued);
  }
  size_t running = 0;
  EXPECT_EQ(queue.Drain(absl::Now() + absl::Milliseconds(200), &running), 5u);
  EXPECT_EQ(dropped, 5);
  EXPECT_EQ(running, 1u);
  EXPECT_EQ(queue.Submit([&] { ++ran; }), WorkQueue::Submitted::kStopping);
  release.Notify();
  // Nothing dropped ran.
  while (ran.load() < 1) absl::SleepFor(absl::Milliseconds(5));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(ran, 1);
}

TEST(WorkQueueTest, DrainRunsTheQueuedTasksWhenThereIsTime) {
  std::atomic<int> ran{0}, dropped{0};
  WorkQueue queue(/*threads=*/2, /*max_pending=*/100);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(queue.Submit([&] { ++ran; }, 0, [&] { ++dropped; }), WorkQueue::Submitted::kQueued);
  }
  size_t running = 1;
  EXPECT_EQ(queue.Drain(absl::Now() + absl::Seconds(30), &running), 0u);
  EXPECT_EQ(running, 0u);
  EXPECT_EQ(ran, 20);
  EXPECT_EQ(dropped, 0);
  EXPECT_EQ(ShuttingDown().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(ToGrpcStatusTest, KeepsCodeAndMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  auto s = ToGrpcStatus(absl::NotFoundError("no host named 'x'"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no host named 'x'");
}

TEST(ToGrpcStatusTest, TooLargeNamesTheRpcAndTheLimit) {
  grpc::Status s = TooLarge("AckChange", 70000, 65536);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "AckChange request of 70000 bytes is over limits.max_message_bytes (65536)");
}

}  // namespace
}  // namespace smbfleet::collector
