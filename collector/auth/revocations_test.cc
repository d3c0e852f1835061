#include "collector/auth/revocations.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

smbfleet::v1::Revocation BySerial(const std::string& serial) {
  smbfleet::v1::Revocation r;
  r.set_serial(serial);
  r.set_reason("test");
  r.set_revoked_by("root");
  return r;
}

TEST(RevocationsTest, ANewRevocationIsSeenOnRefreshAndRunsTheCallbackOnce) {
  auto store = NewMemoryIdentityStore();
  ASSERT_TRUE(store->AddRevocation(BySerial("1a")).ok());
  std::atomic<int> calls{0};
  Revocations revocations(store.get(), absl::Hours(1), [&]() -> size_t { return ++calls; });
  ASSERT_TRUE(revocations.Start().ok());
  EXPECT_TRUE(revocations.IsRevoked("1a", ""));
  EXPECT_FALSE(revocations.IsRevoked("1b", ""));
  EXPECT_FALSE(revocations.IsRevoked("", ""));
  const int after_start = calls.load();

  smbfleet::v1::Revocation by_fp;
  by_fp.set_fingerprint(std::string(64, 'c'));
  by_fp.set_reason("test");
  by_fp.set_revoked_by("root");
  ASSERT_TRUE(store->AddRevocation(by_fp).ok());
  EXPECT_FALSE(revocations.IsRevoked("", std::string(64, 'c'))) << "not read yet";
  auto closed = revocations.Refresh();
  ASSERT_TRUE(closed.ok()) << closed.status();
  EXPECT_TRUE(revocations.IsRevoked("zz", std::string(64, 'c')));
  EXPECT_EQ(calls.load(), after_start + 1);
  ASSERT_TRUE(revocations.Refresh().ok());
  EXPECT_EQ(calls.load(), after_start + 1) << "nothing new: no callback";
}

TEST(RevocationsTest, WakeRefreshesOnTheBackgroundThread) {
  auto store = NewMemoryIdentityStore();
  absl::Notification seen;
  Revocations* self = nullptr;
  Revocations revocations(store.get(), absl::Hours(1), [&]() -> size_t {
    if (self != nullptr && self->IsRevoked("2b", "") && !seen.HasBeenNotified()) seen.Notify();
    return 0;
  });
  self = &revocations;
  ASSERT_TRUE(revocations.Start().ok());
  ASSERT_TRUE(store->AddRevocation(BySerial("2b")).ok());
  revocations.Wake();
  EXPECT_TRUE(seen.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

}  // namespace
}  // namespace smbfleet::collector
