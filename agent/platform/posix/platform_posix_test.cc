#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
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

// The read-only mappings of this test's own program file (its code and constants, what
// ReleaseProgramPages takes): calls visit(start, end, resident KiB) for each (/proc/self/smaps).
template <typename Visit>
void ForEachProgramMapping(Visit visit) {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  unsigned long start = 0;
  unsigned long end = 0;
  while (std::getline(smaps, line)) {
    unsigned long s = 0;
    unsigned long e = 0;
    long kib = 0;
    char perms[5] = {};
    int path_at = 0;
    // A mapping's header line (START-END PERMS OFFSET DEV INODE PATH), then its fields.
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %*s %*s %*s %n", &s, &e, perms, &path_at) == 3 &&
        path_at > 0) {
      ours =
          perms[0] == 'r' && perms[1] != 'w' && line.compare(path_at, std::string::npos, exe) == 0;
      start = s;
      end = e;
    } else if (ours && std::sscanf(line.c_str(), "Rss: %ld kB", &kib) == 1) {
      visit(start, end, kib);
    }
  }
}

// Reads one byte of each page in [start, end). Not instrumented: AddressSanitizer would take
// the redzones between globals for overflows.
__attribute__((no_sanitize("address"))) unsigned TouchEveryPage(unsigned long start,
                                                                unsigned long end) {
  unsigned sum = 0;
  for (unsigned long at = start; at < end; at += 4096) {
    sum +=
        *reinterpret_cast<const volatile unsigned char*>(at);  // NOLINT(performance-no-int-to-ptr)
  }
  return sum;
}

long ProgramRssKib() {
  long total = 0;
  ForEachProgramMapping([&](unsigned long, unsigned long, long kib) { total += kib; });
  return total;
}

TEST(PlatformPosixTest, ReleaseProgramPagesLeavesResidentOnlyWhatRunsAgain) {
  // Every page of the program file made resident first: one byte read from each.
  std::vector<std::pair<unsigned long, unsigned long>> ranges;
  ForEachProgramMapping(
      [&](unsigned long start, unsigned long end, long) { ranges.emplace_back(start, end); });
  unsigned sum = 0;
  for (const auto& [start, end] : ranges) sum += TouchEveryPage(start, end);
  const long before = ProgramRssKib();
  ASSERT_TRUE(ReleaseProgramPages().ok());
  const long after = ProgramRssKib();
  // The code that ran since the release (this test, the smaps reader) comes back, not the rest.
  ASSERT_GT(before, 1024) << sum;
  EXPECT_LT(after, before / 2) << "program RSS " << before << " KiB before, " << after << " after";
  // The code still runs, paged in again from the file.
  EXPECT_GT(ProgramRssKib(), 0);
}

}  // namespace
}  // namespace smbfleet::agent::platform
