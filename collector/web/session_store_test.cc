#include "collector/web/session_store.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Principal Person() {
  Principal p;
  p.name = "alice";
  p.kind = PrincipalKind::kOperator;
  p.kind_text = "operator";
  p.roles = {"viewer"};
  p.token_id = "0123456789abcdef";
  return p;
}

SessionOptions Options(absl::Duration idle = absl::Minutes(30),
                       absl::Duration max = absl::Hours(12), size_t max_sessions = 10'000) {
  SessionOptions o;
  o.idle = idle;
  o.max = max;
  o.max_sessions = max_sessions;
  return o;
}

struct FakeClock {
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  SessionStore::Clock fn() {
    return [this] { return now; };
  }
};

TEST(SessionStoreTest, ResolvesToThePrincipalItWasMadeFrom) {
  FakeClock clock;
  SessionStore store({}, nullptr, clock.fn());
  absl::StatusOr<SessionStore::Created> s = store.Create(Person());
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(IsSessionId(s->id)) << s->id;
  EXPECT_EQ(s->expires_at, clock.now + absl::Hours(12));
  absl::StatusOr<Principal> p = store.Resolve(s->id);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "alice");
  EXPECT_EQ(p->token_id, "0123456789abcdef");
  // Two sign-ins, two sessions.
  EXPECT_NE(store.Create(Person())->id, s->id);
}

TEST(SessionStoreTest, IdleExpiryRestartsWithEachCall) {
  FakeClock clock;
  SessionStore store(Options(), nullptr, clock.fn());
  std::string id = store.Create(Person())->id;
  clock.now += absl::Minutes(29);
  ASSERT_TRUE(store.Resolve(id).ok());
  clock.now += absl::Minutes(29);
  ASSERT_TRUE(store.Resolve(id).ok());
  clock.now += absl::Minutes(30);
  absl::StatusOr<Principal> p = store.Resolve(id);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(p.status().message(), HasSubstr("expired"));
  EXPECT_THAT(p.status().message(), Not(HasSubstr(id.substr(4))));
  EXPECT_EQ(store.size(), 0u);
}

TEST(SessionStoreTest, AbsoluteExpiryHoldsHoweverOftenUsed) {
  FakeClock clock;
  SessionStore store(Options(absl::Minutes(30), absl::Hours(1)), nullptr, clock.fn());
  std::string id = store.Create(Person())->id;
  for (int i = 0; i < 5; ++i) {
    clock.now += absl::Minutes(15);
    EXPECT_EQ(store.Resolve(id).ok(), i < 3) << i;
  }
}

TEST(SessionStoreTest, NeverOutlivesItsCredential) {
  FakeClock clock;
  SessionStore store({}, nullptr, clock.fn());
  Principal p = Person();
  p.expires_unix = absl::ToUnixSeconds(clock.now + absl::Minutes(10));
  absl::StatusOr<SessionStore::Created> s = store.Create(p);
  EXPECT_EQ(s->expires_at, clock.now + absl::Minutes(10));
  clock.now += absl::Minutes(11);
  EXPECT_FALSE(store.Resolve(s->id).ok());
}

TEST(SessionStoreTest, EndEndsIt) {
  FakeClock clock;
  SessionStore store({}, nullptr, clock.fn());
  std::string id = store.Create(Person())->id;
  EXPECT_TRUE(store.End(id));
  EXPECT_FALSE(store.End(id));
  EXPECT_EQ(store.Resolve(id).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(SessionStoreTest, RevokedCredentialEndsTheSessionAtTheNextCheck) {
  FakeClock clock;
  bool revoked = false;
  int checks = 0;
  SessionStore store(
      Options(),
      [&](const Principal& p) {
        ++checks;
        return revoked ? absl::UnauthenticatedError("token " + p.token_id + " was revoked")
                       : absl::OkStatus();
      },
      clock.fn());
  std::string id = store.Create(Person())->id;
  ASSERT_TRUE(store.Resolve(id).ok());
  EXPECT_EQ(checks, 0);  // checked at sign-in, by the authenticator
  clock.now += absl::Seconds(61);
  ASSERT_TRUE(store.Resolve(id).ok());
  EXPECT_EQ(checks, 1);
  revoked = true;
  clock.now += absl::Seconds(30);
  EXPECT_TRUE(store.Resolve(id).ok());  // within the minute: not re-checked
  clock.now += absl::Seconds(31);
  absl::StatusOr<Principal> p = store.Resolve(id);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(p.status().message(), HasSubstr("revoked"));
  revoked = false;
  EXPECT_FALSE(store.Resolve(id).ok());  // ended for good
}

TEST(SessionStoreTest, AStoreOutageFailsTheCallButKeepsTheSession) {
  FakeClock clock;
  bool down = true;
  SessionStore store(
      {},
      [&](const Principal&) {
        return down ? absl::UnavailableError("database down") : absl::OkStatus();
      },
      clock.fn());
  std::string id = store.Create(Person())->id;
  clock.now += absl::Minutes(2);
  EXPECT_EQ(store.Resolve(id).status().code(), absl::StatusCode::kUnavailable);
  down = false;
  EXPECT_TRUE(store.Resolve(id).ok());
}

TEST(SessionStoreTest, RefusesMalformedAndUnknownIds) {
  SessionStore store({}, nullptr);
  EXPECT_FALSE(store.Resolve("sfs_short").ok());
  EXPECT_FALSE(store.Resolve(std::string("sfs_") + std::string(64, 'a')).ok());
  EXPECT_FALSE(store.Resolve("sft_0123").ok());
  EXPECT_FALSE(IsSessionId(std::string("sfs_") + std::string(64, 'A')));
}

TEST(SessionStoreTest, BoundedNumberOfSessions) {
  FakeClock clock;
  SessionStore store(Options(absl::Minutes(30), absl::Hours(12), 2), nullptr, clock.fn());
  ASSERT_TRUE(store.Create(Person()).ok());
  ASSERT_TRUE(store.Create(Person()).ok());
  EXPECT_EQ(store.Create(Person()).status().code(), absl::StatusCode::kResourceExhausted);
  clock.now += absl::Hours(1);  // both idle out
  EXPECT_TRUE(store.Create(Person()).ok());
}

}  // namespace
}  // namespace smbfleet::collector
