#include "collector/trust/approver_sets.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smbfleet::collector {
namespace {

using smbfleet::v1::ApproverSet;
using smbfleet::v1::SignedApproverSet;

constexpr size_t kEd25519KeySize = 32;
constexpr size_t kEd25519SignatureSize = 64;

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

}  // namespace

absl::StatusOr<ApproverSet> ParseSignedApproverSet(const SignedApproverSet& set) {
  ApproverSet parsed;
  if (set.approver_set().empty() || !parsed.ParseFromString(set.approver_set())) {
    return absl::InvalidArgumentError("approver set: set.approver_set is not an ApproverSet");
  }
  if (parsed.serial() == 0) {
    return absl::InvalidArgumentError("approver set: serial is 0; serials start at 1");
  }
  if (set.signature().size() != kEd25519SignatureSize) {
    return absl::InvalidArgumentError(absl::StrCat("approver set: signature has ",
                                                   set.signature().size(),
                                                   " bytes, an Ed25519 signature has 64"));
  }
  for (int i = 0; i < parsed.approvers_size(); ++i) {
    const smbfleet::v1::ApproverKey& k = parsed.approvers(i);
    if (k.name().empty() || k.public_key().size() != kEd25519KeySize) {
      return absl::InvalidArgumentError(
          absl::StrCat("approver set: approvers[", i, "] needs a name and a 32-byte public key"));
    }
  }
  return parsed;
}

ApproverSets::ApproverSets(ApproverSetStore* store, StreamRegistry* registry,
                           absl::Duration poll_interval)
    : store_(store), registry_(registry), poll_interval_(poll_interval) {}

ApproverSets::~ApproverSets() {
  stop_.Notify();
  if (poller_.joinable()) poller_.join();
}

absl::Status ApproverSets::Start() {
  RETURN_IF_ERROR(Refresh().status());
  if (poll_interval_ > absl::ZeroDuration()) poller_ = std::thread([this] { Poll(); });
  return absl::OkStatus();
}

bool ApproverSets::Take(const SignedApproverSet& set, uint64_t serial) {
  absl::MutexLock lock(&mu_);
  if (current_.has_value() && serial <= serial_) return false;
  current_ = set;
  serial_ = serial;
  return true;
}

size_t ApproverSets::Broadcast(const SignedApproverSet& set) {
  smbfleet::v1::WatchResponse message;
  *message.mutable_approver_set() = set;
  return registry_->SendAll(message);
}

absl::StatusOr<smbfleet::v1::PublishApproverSetResponse> ApproverSets::Publish(
    const SignedApproverSet& set, const std::string& published_by) {
  ASSIGN_OR_RETURN(ApproverSet parsed, ParseSignedApproverSet(set));
  RETURN_IF_ERROR(store_->Publish(set, parsed.serial(), published_by));
  smbfleet::v1::PublishApproverSetResponse response;
  response.set_serial(parsed.serial());
  if (Take(set, parsed.serial())) {
    response.set_agents_sent(static_cast<uint32_t>(Broadcast(set)));
  }
  Log()->info(
      "approver set serial {} ({} approver(s), root key {}) published by {}; sent to {} "
      "agent(s) on this replica",
      parsed.serial(), parsed.approvers_size(), absl::CHexEscape(set.root_key_id().substr(0, 64)),
      absl::CHexEscape(published_by), response.agents_sent());
  return response;
}

std::optional<SignedApproverSet> ApproverSets::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<size_t> ApproverSets::Refresh() {
  ASSIGN_OR_RETURN(std::optional<SignedApproverSet> latest, store_->Latest());
  if (!latest.has_value()) return 0;
  ApproverSet parsed;
  if (!parsed.ParseFromString(latest->approver_set())) {
    return absl::DataLossError("the stored approver set does not parse");
  }
  if (!Take(*latest, parsed.serial())) return 0;
  return Broadcast(*latest);
}

void ApproverSets::Poll() {
  // Logged once when reading begins to fail (the database is away) and once when it works again.
  bool failing = false;
  while (!stop_.WaitForNotificationWithTimeout(poll_interval_)) {
    absl::StatusOr<size_t> sent = Refresh();
    if (!sent.ok()) {
      if (!failing) {
        Log()->warn("approver sets: cannot read the latest published set: {}",
                    std::string(sent.status().message()));
      }
      failing = true;
      continue;
    }
    if (failing) Log()->info("approver sets: reading the published set again");
    failing = false;
    if (*sent > 0) {
      Log()->info("a newer approver set, published on another replica, sent to {} agent(s)", *sent);
    }
  }
}

}  // namespace smbfleet::collector
