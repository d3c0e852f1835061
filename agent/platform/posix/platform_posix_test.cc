#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

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

}  // namespace
}  // namespace smbfleet::agent::platform
