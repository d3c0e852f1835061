#ifndef SMBFLEET_COLLECTOR_WEB_SESSION_STORE_H_
#define SMBFLEET_COLLECTOR_WEB_SESSION_STORE_H_

// The console's sign-in sessions: `sfs_<64 hex>` bearer ids, made from an API token or a client
// certificate. Kept in this process's memory only (a restart signs everyone out), and only by
// the SHA-256 of the id, so that not even a memory dump hands out usable ids. A session ends
// after `idle` without a call, at `max` after sign-in, at the credential's own expiry, at
// SignOut, or when its credential is found revoked: the credential is re-verified on a call at
// most every `reverify` (one minute by default).

#include <cstddef>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/auth/authorize.h"

namespace smbfleet::collector {

struct SessionOptions {
  absl::Duration idle = absl::Minutes(30);
  absl::Duration max = absl::Hours(12);
  absl::Duration reverify = absl::Minutes(1);
  size_t max_sessions = 10'000;  // live sessions at once; sign-in is refused beyond
};

class SessionStore {
 public:
  using Clock = std::function<absl::Time()>;
  // OK while the principal's credential (token or certificate) still stands; UNAUTHENTICATED
  // when it was revoked or expired (the session then ends); any other error leaves the session
  // and fails the call.
  using CredentialCheck = std::function<absl::Status(const Principal&)>;

  SessionStore(SessionOptions options, CredentialCheck check, Clock clock = absl::Now);

  struct Created {
    std::string id;  // sfs_...: to hand to the client once
    absl::Time expires_at;
  };
  // RESOURCE_EXHAUSTED when max_sessions are live.
  absl::StatusOr<Created> Create(const Principal& principal);

  // The principal the session was made from, and the session's idle clock restarted.
  // UNAUTHENTICATED ("session expired", "unknown session", "...revoked") otherwise; never echoes
  // the id.
  absl::StatusOr<Principal> Resolve(absl::string_view id);

  // Ends the session; false when it was not live.
  bool End(absl::string_view id);

  size_t size() const;
  const SessionOptions& options() const { return options_; }

 private:
  struct Session {
    Principal principal;
    absl::Time created;
    absl::Time last_used;
    absl::Time expires;  // absolute: min(created + max, the credential's expiry)
    absl::Time verified;
  };
  void SweepLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SessionOptions options_;
  const CredentialCheck check_;
  const Clock clock_;
  mutable absl::Mutex mu_;
  // Keyed by the SHA-256 of the id.
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
};

// Is `id` shaped like a session id (sfs_ and 64 lower hex digits)?
bool IsSessionId(absl::string_view id);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_WEB_SESSION_STORE_H_
