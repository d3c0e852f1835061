#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collector/store/identity_store.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

absl::Time TimeOf(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(ts));
}

bool Active(const v1::ApiToken& t, absl::Time now) {
  return !t.has_revoked_at() && (!t.has_expires_at() || TimeOf(t.expires_at()) > now);
}

class MemoryIdentityStore : public IdentityStore {
 public:
  absl::Status AddApiToken(const StoredApiToken& token) override {
    absl::MutexLock lock(&mu_);
    if (!tokens_.emplace(token.token.id(), token).second) {
      return absl::AlreadyExistsError(absl::StrCat("api token ", token.token.id(), " exists"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<StoredApiToken>> GetApiToken(const std::string& id) override {
    absl::MutexLock lock(&mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return std::optional<StoredApiToken>();
    return std::optional<StoredApiToken>(it->second);
  }

  absl::StatusOr<std::vector<v1::ApiToken>> ListApiTokens(bool include_inactive,
                                                          absl::Time now) override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::ApiToken> out;
    for (const auto& [id, t] : tokens_) {
      if (include_inactive || Active(t.token, now)) out.push_back(t.token);
    }
    std::sort(out.begin(), out.end(), [](const v1::ApiToken& a, const v1::ApiToken& b) {
      return std::make_tuple(TimeOf(a.created_at()), a.id()) <
             std::make_tuple(TimeOf(b.created_at()), b.id());
    });
    return out;
  }

  absl::StatusOr<v1::ApiToken> RevokeApiToken(const std::string& id, const std::string& revoked_by,
                                              const std::string& /*reason*/,
                                              absl::Time at) override {
    absl::MutexLock lock(&mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) {
      return absl::NotFoundError(absl::StrCat("no api token '", id.substr(0, 64), "'"));
    }
    v1::ApiToken& t = it->second.token;
    if (t.has_revoked_at()) {
      return absl::FailedPreconditionError(
          absl::StrCat("api token ", id, " was revoked by ", t.revoked_by(), " already"));
    }
    t.set_revoked_by(revoked_by);
    *t.mutable_revoked_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixMicros(at) * 1000);
    return t;
  }

  absl::StatusOr<v1::Revocation> AddRevocation(const v1::Revocation& revocation) override {
    absl::MutexLock lock(&mu_);
    const bool host_only = revocation.serial().empty() && revocation.fingerprint().empty();
    if (host_only && revocation.host().empty()) {
      // As PostgreSQL's CHECK: a revocation names something.
      return absl::InvalidArgumentError("revocation: no serial, fingerprint or host");
    }
    for (const v1::Revocation& r : revocations_) {
      if (host_only && r.serial().empty() && r.fingerprint().empty() &&
          r.host() == revocation.host()) {
        return absl::AlreadyExistsError(
            absl::StrCat("host ", revocation.host(), " is revoked already"));
      }
      if ((!revocation.serial().empty() && r.serial() == revocation.serial()) ||
          (!revocation.fingerprint().empty() && r.fingerprint() == revocation.fingerprint())) {
        return absl::AlreadyExistsError(absl::StrCat(
            "certificate ",
            revocation.serial().empty() ? revocation.fingerprint() : revocation.serial(),
            " is revoked already"));
      }
    }
    v1::Revocation stored = revocation;
    *stored.mutable_revoked_at() = TimeUtil::NanosecondsToTimestamp(
        TimeUtil::TimestampToMicroseconds(revocation.revoked_at()) * 1000);
    revocations_.push_back(stored);
    return stored;
  }

  absl::StatusOr<std::vector<v1::Revocation>> ListRevocations() override {
    absl::MutexLock lock(&mu_);
    return revocations_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, StoredApiToken> tokens_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Revocation> revocations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<IdentityStore> NewMemoryIdentityStore() {
  return std::make_unique<MemoryIdentityStore>();
}

}  // namespace smbfleet::collector
