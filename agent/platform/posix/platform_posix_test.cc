#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/platform/platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::platform {
namespace {

using ::testing::HasSubstr;

TEST(PlatformPosixTest, SigtermCallsTheStopHandlerOnAnotherThread) {
  std::mutex mu;
  std::condition_variable cv;
  int stops = 0;
  ASSERT_TRUE(InstallStopHandler([&] {
                std::lock_guard<std::mutex> lock(mu);
                ++stops;
                cv.notify_all();
              }).ok());
  ASSERT_EQ(::raise(SIGTERM), 0);
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return stops == 1; }));
  EXPECT_FALSE(InstallStopHandler([] {}).ok());  // one handler per process
}

TEST(PlatformPosixTest, RunsProgramsAndHasNoLiveWindowsSource) {
  auto runner = NewCommandRunner();
  Command c;
  c.argv = {"/bin/echo", "hi"};
  auto r = runner->Run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_data, "hi\n");

  auto source = NewLiveWindowsSource(SourceContext{});
  EXPECT_EQ(source.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(source.status().message()), HasSubstr("windows-capture:DIR"));
}

#ifdef __GLIBC__
// The heaps (arenas) glibc's malloc has made so far, as malloc_info lists them.
int HeapArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = ::open_memstream(&text, &size);
  if (out == nullptr) return -1;
  ::malloc_info(0, out);
  std::fclose(out);
  int n = 0;
  for (const char* p = text; (p = std::strstr(p, "<heap nr=")) != nullptr; ++p) ++n;
  std::free(text);
  return n;
}

TEST(PlatformPosixTest, ThreadsAllocatingAtOnceMakeNoNewHeapArena) {
  LimitHeapArenas();
  const int before = HeapArenas();
  ASSERT_GE(before, 1);
  // Eight threads, each allocating while all are alive: without the limit glibc gives each
  // thread without an arena a new one.
  constexpr int kThreads = 8;
  std::mutex mu;
  std::condition_variable cv;
  int allocated = 0;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      std::vector<char*> blocks;
      blocks.reserve(16);
      for (int j = 0; j < 16; ++j) blocks.push_back(new char[1000]);
      std::unique_lock<std::mutex> lock(mu);
      ++allocated;
      cv.notify_all();
      cv.wait(lock, [&] { return allocated == kThreads; });
      for (char* b : blocks) delete[] b;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(HeapArenas(), before);
}
#endif

}  // namespace
}  // namespace smbfleet::agent::platform
