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

TEST(RevocationsTest, AHostOnlyRevocationRevokesTheHostAndACertificatesHostIsOnlyANote) {
  auto store = NewMemoryIdentityStore();
  smbfleet::v1::Revocation cert = BySerial("3c");
  cert.set_host("fs02");  // the certificate's host, for the record: fs02 itself is not revoked
  ASSERT_TRUE(store->AddRevocation(cert).ok());
  std::atomic<int> calls{0};
  Revocations revocations(store.get(), absl::Hours(1), [&]() -> size_t { return ++calls; });
  ASSERT_TRUE(revocations.Start().ok());
  const int after_start = calls.load();
  EXPECT_FALSE(revocations.IsHostRevoked("fs02"));

  smbfleet::v1::Revocation host;
  host.set_host("fs01");
  host.set_reason("decommissioned");
  host.set_revoked_by("root");
  ASSERT_TRUE(store->AddRevocation(host).ok());
  EXPECT_FALSE(revocations.IsHostRevoked("fs01")) << "not read yet";
  ASSERT_TRUE(revocations.Refresh().ok());
  EXPECT_EQ(calls.load(), after_start + 1) << "a host revocation closes streams too";
  EXPECT_TRUE(revocations.IsHostRevoked("fs01"));
  EXPECT_FALSE(revocations.IsHostRevoked("fs01.example.org"));
  EXPECT_FALSE(revocations.IsHostRevoked(""));
  // Any certificate of fs01, whatever its serial; none of another host.
  EXPECT_TRUE(revocations.IsRevoked("fs01", "99", ""));
  EXPECT_FALSE(revocations.IsRevoked("fs03", "99", ""));
  EXPECT_TRUE(revocations.IsRevoked("fs03", "3c", ""));
  EXPECT_FALSE(revocations.IsRevoked("", "99", "")) << "a host-only revocation is not a serial";
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
