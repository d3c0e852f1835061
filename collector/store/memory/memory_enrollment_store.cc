#include "collector/store/memory/memory_enrollment_store.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

int64_t Nanos(const google::protobuf::Timestamp& ts) {
  return TimeUtil::TimestampToNanoseconds(ts);
}

// Why a token cannot be used at `now`, or "" when it can.
std::string Unusable(const v1::EnrollmentToken& t, absl::Time now) {
  if (t.has_revoked_at()) return "revoked";
  if (Nanos(t.expires_at()) <= absl::ToUnixNanos(now)) return "expired";
  if (t.uses() >= t.max_uses()) return "used up";
  return "";
}

}  // namespace

absl::Status MemoryEnrollmentStore::CreateToken(const v1::EnrollmentToken& token,
                                                const std::string& secret_sha256) {
  absl::MutexLock lock(&mu_);
  EnrollmentTokenRecord record{token, secret_sha256};
  record.token.set_uses(0);
  if (!tokens_.emplace(token.id(), std::move(record)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("enrollment token ", token.id(), " exists already"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<EnrollmentTokenRecord>> MemoryEnrollmentStore::GetToken(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return std::optional<EnrollmentTokenRecord>();
  return std::optional<EnrollmentTokenRecord>(it->second);
}

absl::StatusOr<std::vector<v1::EnrollmentToken>> MemoryEnrollmentStore::ListTokens(
    bool include_inactive, absl::Time now) {
  std::vector<v1::EnrollmentToken> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, record] : tokens_) {
      if (include_inactive || Unusable(record.token, now).empty()) out.push_back(record.token);
    }
  }
  std::sort(out.begin(), out.end(), [](const v1::EnrollmentToken& a, const v1::EnrollmentToken& b) {
    return std::make_tuple(-Nanos(a.created_at()), a.id()) <
           std::make_tuple(-Nanos(b.created_at()), b.id());
  });
  return out;
}

absl::StatusOr<v1::EnrollmentToken> MemoryEnrollmentStore::RevokeToken(
    const std::string& id, const std::string& revoked_by, const std::string& /*reason*/,
    absl::Time at) {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) {
    return absl::NotFoundError(absl::StrCat("no enrollment token '", id.substr(0, 64), "'"));
  }
  v1::EnrollmentToken& t = it->second.token;
  if (t.has_revoked_at()) {
    return absl::FailedPreconditionError(
        absl::StrCat("enrollment token ", id, " was revoked by ", t.revoked_by(), " already"));
  }
  *t.mutable_revoked_at() = TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(at));
  t.set_revoked_by(revoked_by);
  return t;
}

absl::StatusOr<v1::EnrollmentToken> MemoryEnrollmentStore::TakeUse(const std::string& id,
                                                                   absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) {
    return absl::NotFoundError(absl::StrCat("no enrollment token '", id.substr(0, 64), "'"));
  }
  v1::EnrollmentToken& t = it->second.token;
  if (std::string why = Unusable(t, now); !why.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("enrollment token ", id, " is ", why));
  }
  t.set_uses(t.uses() + 1);
  return t;
}

absl::Status MemoryEnrollmentStore::RecordCertificate(const v1::IssuedCertificate& cert) {
  absl::MutexLock lock(&mu_);
  for (const auto& [serial, c] : certs_) {
    if (serial == cert.serial() || c.fingerprint() == cert.fingerprint()) {
      return absl::AlreadyExistsError(
          absl::StrCat("certificate ", cert.serial(), " is recorded already"));
    }
  }
  certs_.emplace(cert.serial(), cert);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::IssuedCertificate>> MemoryEnrollmentStore::ListCertificates(
    const std::string& host, bool include_inactive, absl::Time now) {
  std::vector<v1::IssuedCertificate> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [serial, c] : certs_) {
      if (!host.empty() && c.host() != host) continue;
      const bool active = !c.has_revoked_at() && Nanos(c.not_after()) > absl::ToUnixNanos(now);
      if (include_inactive || active) out.push_back(c);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const v1::IssuedCertificate& a, const v1::IssuedCertificate& b) {
              return std::make_tuple(a.host(), Nanos(a.issued_at()), a.serial()) <
                     std::make_tuple(b.host(), Nanos(b.issued_at()), b.serial());
            });
  return out;
}

absl::StatusOr<HostLabels> MemoryEnrollmentStore::GetHostLabels(const std::string& host) {
  absl::MutexLock lock(&mu_);
  auto it = labels_.find(host);
  if (it == labels_.end()) return HostLabels();
  return it->second;
}

absl::Status MemoryEnrollmentStore::SetHostLabels(const std::string& host, const HostLabels& labels,
                                                  const std::string& /*set_by*/,
                                                  absl::Time /*at*/) {
  absl::MutexLock lock(&mu_);
  labels_[host] = labels;
  return absl::OkStatus();
}

}  // namespace smbfleet::collector
