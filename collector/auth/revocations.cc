#include "collector/auth/revocations.h"

#include <utility>

#include "common/logging.h"

namespace smbfleet::collector {

Revocations::Revocations(IdentityStore* store, absl::Duration poll,
                         std::function<size_t()> on_revoked)
    : store_(store), poll_(poll), on_revoked_(std::move(on_revoked)) {}

Revocations::~Revocations() {
  {
    absl::MutexLock lock(&wake_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status Revocations::Start() {
  absl::StatusOr<size_t> first = Refresh();
  if (!first.ok()) return first.status();
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void Revocations::Wake() {
  absl::MutexLock lock(&wake_mu_);
  woken_ = true;
}

absl::StatusOr<size_t> Revocations::Refresh() {
  absl::MutexLock serial(&refresh_mu_);
  absl::StatusOr<std::vector<smbfleet::v1::Revocation>> all = store_->ListRevocations();
  if (!all.ok()) return all.status();
  absl::flat_hash_set<std::string> serials;
  absl::flat_hash_set<std::string> fingerprints;
  absl::flat_hash_set<std::string> hosts;
  for (const auto& r : *all) {
    if (!r.serial().empty()) serials.insert(r.serial());
    if (!r.fingerprint().empty()) fingerprints.insert(r.fingerprint());
    // With a serial or fingerprint the host is only a note; alone, it revokes the host.
    if (r.serial().empty() && r.fingerprint().empty() && !r.host().empty()) {
      hosts.insert(r.host());
    }
  }
  bool grew = false;
  {
    absl::MutexLock lock(&mu_);
    grew = all->size() > count_;
    serials_ = std::move(serials);
    fingerprints_ = std::move(fingerprints);
    hosts_ = std::move(hosts);
    count_ = all->size();
  }
  if (grew && on_revoked_) return on_revoked_();
  return 0;
}

bool Revocations::IsRevoked(absl::string_view serial, absl::string_view fingerprint) const {
  absl::MutexLock lock(&mu_);
  return (!serial.empty() && serials_.contains(serial)) ||
         (!fingerprint.empty() && fingerprints_.contains(fingerprint));
}

bool Revocations::IsHostRevoked(absl::string_view host) const {
  absl::MutexLock lock(&mu_);
  return !host.empty() && hosts_.contains(host);
}

bool Revocations::IsRevoked(absl::string_view host, absl::string_view serial,
                            absl::string_view fingerprint) const {
  return IsHostRevoked(host) || IsRevoked(serial, fingerprint);
}

size_t Revocations::size() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

void Revocations::Loop() {
  bool failing = false;
  while (true) {
    {
      absl::MutexLock lock(&wake_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(wake_mu_) { return woken_ || stopping_; };
      wake_mu_.AwaitWithTimeout(absl::Condition(&ready), poll_);
      if (stopping_) return;
      woken_ = false;
    }
    absl::StatusOr<size_t> s = Refresh();
    if (!s.ok() && !failing) {
      Logger("collector")
          ->warn("revocations: cannot re-read (the last known set stays in force): {}",
                 LogSafe(s.status()));
    }
    failing = !s.ok();
  }
}

}  // namespace smbfleet::collector
