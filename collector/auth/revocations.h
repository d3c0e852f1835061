#ifndef SMBFLEET_COLLECTOR_AUTH_REVOCATIONS_H_
#define SMBFLEET_COLLECTOR_AUTH_REVOCATIONS_H_

// The revoked certificates and hosts, held in memory so that every call checks them without a
// database round trip. Re-read from the IdentityStore when woken (PostgreSQL NOTIFY on
// smbfleet_revocations, or a revocation made through this process) and every `poll` as a
// fallback for a lost notification; when the set grows, `on_revoked` runs (it closes the
// streams of the newly revoked certificates and says how many).

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/auth/authenticate.h"
#include "collector/store/identity_store.h"

namespace smbfleet::collector {

class Revocations : public RevocationChecker {
 public:
  Revocations(IdentityStore* store, absl::Duration poll, std::function<size_t()> on_revoked);
  ~Revocations() override;
  Revocations(const Revocations&) = delete;
  Revocations& operator=(const Revocations&) = delete;

  // Reads the revocations once (an error when the store cannot be read), then starts the
  // refresh thread.
  absl::Status Start();
  // Re-read now (from any thread; returns at once).
  void Wake();
  // Re-read here and now; runs on_revoked when the set grew and returns what it returned (0
  // when the set did not grow).
  absl::StatusOr<size_t> Refresh();

  bool IsRevoked(absl::string_view serial, absl::string_view fingerprint) const override;
  bool IsHostRevoked(absl::string_view host) const override;
  // Either: the certificate, or its host (an empty host is never revoked).
  bool IsRevoked(absl::string_view host, absl::string_view serial,
                 absl::string_view fingerprint) const;
  size_t size() const;

 private:
  void Loop();

  IdentityStore* const store_;
  const absl::Duration poll_;
  const std::function<size_t()> on_revoked_;

  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> serials_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> fingerprints_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> hosts_ ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex wake_mu_;
  bool woken_ ABSL_GUARDED_BY(wake_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(wake_mu_) = false;
  absl::Mutex refresh_mu_;  // one refresh at a time
  std::thread thread_;
};

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_AUTH_REVOCATIONS_H_
