#include "agent/core/approver_trust.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/core/durable_file.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smbfleet::agent {
namespace {

constexpr size_t kMaxSetBytes = 1 << 20;

}  // namespace

ApproverTrust::ApproverTrust(TrustConfig config, std::string state_path)
    : config_(std::move(config)), state_path_(std::move(state_path)), keys_(PinnedKeys(config_)) {}

absl::Status ApproverTrust::Open() {
  absl::StatusOr<std::string> bytes = ReadFile(state_path_, kMaxSetBytes);
  if (absl::IsNotFound(bytes.status())) return absl::OkStatus();
  absl::StatusOr<smbfleet::v1::ApproverSet> set = [&]() -> absl::StatusOr<v1::ApproverSet> {
    RETURN_IF_ERROR(bytes.status());
    smbfleet::v1::SignedApproverSet signed_set;
    if (!signed_set.ParseFromString(*bytes)) {
      return absl::InvalidArgumentError("not a SignedApproverSet");
    }
    return VerifyApproverSet(signed_set, config_.root_public_key);
  }();
  if (!set.ok()) {
    Logger("agent")->warn("{}: the kept approver set is ignored: {}", state_path_,
                          std::string(set.status().message()));
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  serial_ = set->serial();
  keys_ = WithApproverSet(PinnedKeys(config_), *set);
  return absl::OkStatus();
}

absl::Status ApproverTrust::Accept(const smbfleet::v1::SignedApproverSet& signed_set) {
  ASSIGN_OR_RETURN(smbfleet::v1::ApproverSet set,
                   VerifyApproverSet(signed_set, config_.root_public_key));
  absl::MutexLock lock(&mu_);
  if (set.serial() <= serial_) {
    return absl::FailedPreconditionError(absl::StrCat("approver set serial ", set.serial(),
                                                      " refused: this host holds serial ", serial_,
                                                      " and accepts only a greater one"));
  }
  RETURN_IF_ERROR(WriteFileDurably(state_path_, signed_set.SerializeAsString(), 0600));
  serial_ = set.serial();
  keys_ = WithApproverSet(PinnedKeys(config_), set);
  Logger("agent")->info("approver set serial {} accepted: {} approver key(s) trusted", serial_,
                        keys_.size());
  return absl::OkStatus();
}

TrustedKeys ApproverTrust::Keys() const {
  absl::MutexLock lock(&mu_);
  return keys_;
}

uint64_t ApproverTrust::serial() const {
  absl::MutexLock lock(&mu_);
  return serial_;
}

}  // namespace smbfleet::agent
