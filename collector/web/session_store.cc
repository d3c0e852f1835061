#include "collector/web/session_store.h"

#include <openssl/rand.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/auth/api_tokens.h"

namespace smbfleet::collector {
namespace {

constexpr absl::string_view kPrefix = "sfs_";
constexpr size_t kSecretBytes = 32;

}  // namespace

bool IsSessionId(absl::string_view id) {
  if (!absl::StartsWith(id, kPrefix)) return false;
  absl::string_view hex = id.substr(kPrefix.size());
  return hex.size() == 2 * kSecretBytes && std::all_of(hex.begin(), hex.end(), [](char c) {
           return absl::ascii_isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

SessionStore::SessionStore(SessionOptions options, CredentialCheck check, Clock clock)
    : options_(options), check_(std::move(check)), clock_(std::move(clock)) {}

absl::StatusOr<SessionStore::Created> SessionStore::Create(const Principal& principal) {
  unsigned char secret[kSecretBytes];
  if (RAND_bytes(secret, sizeof(secret)) != 1) {
    return absl::InternalError("cannot draw random bytes for a session id");
  }
  std::string id =
      absl::StrCat(kPrefix, absl::BytesToHexString(absl::string_view(
                                reinterpret_cast<const char*>(secret), sizeof(secret))));
  absl::Time now = clock_();
  Session session{principal, now, now, now + options_.max, now};
  if (principal.expires_unix != 0) {
    session.expires = std::min(session.expires, absl::FromUnixSeconds(principal.expires_unix));
  }
  absl::MutexLock lock(&mu_);
  SweepLocked(now);
  if (sessions_.size() >= options_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("too many console sessions (", sessions_.size(), "); try again later"));
  }
  Created created{id, session.expires};
  sessions_.emplace(Sha256(id), std::move(session));
  return created;
}

absl::StatusOr<Principal> SessionStore::Resolve(absl::string_view id) {
  if (!IsSessionId(id)) return absl::UnauthenticatedError("malformed session id");
  std::string key = Sha256(id);
  absl::Time now = clock_();
  Principal principal;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) {
      return absl::UnauthenticatedError("unknown or ended session: sign in again");
    }
    Session& s = it->second;
    if (now >= s.expires || now - s.last_used >= options_.idle) {
      sessions_.erase(it);
      return absl::UnauthenticatedError("session expired: sign in again");
    }
    s.last_used = now;
    if (now - s.verified < options_.reverify || !check_) return s.principal;
    principal = s.principal;
  }
  // The credential check may read the store: not under the lock.
  absl::Status still = check_(principal);
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    return absl::UnauthenticatedError("unknown or ended session: sign in again");
  }
  if (absl::IsUnauthenticated(still)) {
    sessions_.erase(it);
    return absl::UnauthenticatedError(
        absl::StrCat("session ended: its credential no longer stands (", still.message(), ")"));
  }
  if (!still.ok()) return still;
  it->second.verified = now;
  return it->second.principal;
}

bool SessionStore::End(absl::string_view id) {
  if (!IsSessionId(id)) return false;
  absl::MutexLock lock(&mu_);
  return sessions_.erase(Sha256(id)) > 0;
}

size_t SessionStore::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

void SessionStore::SweepLocked(absl::Time now) {
  absl::erase_if(sessions_, [&](const auto& entry) {
    const Session& s = entry.second;
    return now >= s.expires || now - s.last_used >= options_.idle;
  });
}

}  // namespace smbfleet::collector
