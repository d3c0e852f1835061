#include "collector/store/memory/memory_approver_key_store.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

absl::Status MemoryApproverKeyStore::AddKey(const v1::ApproverKey& key) {
  absl::MutexLock lock(&mu_);
  if (!keys_.emplace(key.key_id(), key).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("approver key ", key.key_id(), " is registered already"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::ApproverKey>> MemoryApproverKeyStore::GetKey(
    const std::string& key_id) {
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) return std::optional<v1::ApproverKey>();
  return std::optional<v1::ApproverKey>(it->second);
}

absl::StatusOr<std::vector<v1::ApproverKey>> MemoryApproverKeyStore::ListKeys(
    bool include_revoked) {
  std::vector<v1::ApproverKey> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, key] : keys_) {
      if (include_revoked || !key.has_revoked_at()) out.push_back(key);
    }
  }
  std::sort(out.begin(), out.end(), [](const v1::ApproverKey& a, const v1::ApproverKey& b) {
    return std::make_tuple(a.name(), TimeUtil::TimestampToNanoseconds(a.added_at()), a.key_id()) <
           std::make_tuple(b.name(), TimeUtil::TimestampToNanoseconds(b.added_at()), b.key_id());
  });
  return out;
}

absl::StatusOr<v1::ApproverKey> MemoryApproverKeyStore::RevokeKey(const std::string& key_id,
                                                                  const std::string& revoked_by,
                                                                  const std::string& /*reason*/,
                                                                  absl::Time at) {
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(key_id);
  if (it == keys_.end()) {
    return absl::NotFoundError(absl::StrCat("no approver key '", key_id.substr(0, 64), "'"));
  }
  if (it->second.has_revoked_at()) {
    return absl::FailedPreconditionError(absl::StrCat("approver key ", key_id, " was revoked by ",
                                                      it->second.revoked_by(), " already"));
  }
  *it->second.mutable_revoked_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(at));
  it->second.set_revoked_by(revoked_by);
  return it->second;
}

}  // namespace smbfleet::collector
