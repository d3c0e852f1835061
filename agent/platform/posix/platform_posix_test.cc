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

// RssAnon of /proc/self/status, in KiB.
long RssAnonKib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "RssAnon: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

TEST(PlatformPosixTest, ReleaseFreeHeapGivesBackFreedBlocksBelowALiveOne) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer has its own allocator";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer has its own allocator";
#endif
#endif
  // 8 MiB in blocks under the mmap threshold (so on the heap, one above the other), written;
  // all freed but the last, which keeps the heap's top: the freed ones stay resident.
  constexpr int kBlocks = 128;
  constexpr size_t kBlockBytes = 64 * 1024;
  std::vector<char*> blocks;
  blocks.reserve(kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlockBytes)));
    std::memset(blocks.back(), 1, kBlockBytes);
  }
  char* top = blocks.back();
  blocks.pop_back();
  for (char* b : blocks) std::free(b);
  const long before = RssAnonKib();
  ReleaseFreeHeap();
  const long after = RssAnonKib();
  std::free(top);
  ASSERT_GT(before, 0);
  EXPECT_LT(after, before - 4096) << "RssAnon " << before << " KiB before, " << after << " after";
}
#endif

}  // namespace
}  // namespace smbfleet::agent::platform
