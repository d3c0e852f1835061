#include "agent/bench/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <thread>

#include "gtest/gtest.h"

namespace smbfleet::agent::bench {
namespace {

int CurrentPolicy() {
  int policy = 0;
  sched_param param{};
  pthread_getschedparam(pthread_self(), &policy, &param);
  return policy;
}

TEST(ThreadPriorityTest, LowersOnlyTheCallingThread) {
  const int before = CurrentPolicy();
  int worker_policy = -1;
  absl::Status status;
  std::thread worker([&] {
    status = LowerCurrentThreadPriority();
    worker_policy = CurrentPolicy();
  });
  worker.join();
  ASSERT_TRUE(status.ok()) << status;
#ifdef SCHED_IDLE
  EXPECT_EQ(worker_policy, SCHED_IDLE);
#endif
  EXPECT_EQ(CurrentPolicy(), before);  // the caller keeps its scheduling
}

}  // namespace
}  // namespace smbfleet::agent::bench
