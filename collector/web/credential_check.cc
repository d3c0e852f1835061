#include "collector/web/credential_check.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace smbfleet::collector {

SessionStore::CredentialCheck CredentialStillStands(IdentityStore* identity,
                                                    const RevocationChecker* revocations,
                                                    std::function<absl::Time()> clock) {
  return [identity, revocations, clock = std::move(clock)](const Principal& p) -> absl::Status {
    if (p.expires_unix != 0 && clock() >= absl::FromUnixSeconds(p.expires_unix)) {
      return absl::UnauthenticatedError("the credential expired");
    }
    if (!p.token_id.empty() && identity != nullptr) {
      absl::StatusOr<std::optional<StoredApiToken>> token = identity->GetApiToken(p.token_id);
      if (!token.ok()) {
        return absl::UnavailableError(
            absl::StrCat("cannot re-check token ", p.token_id, ": ", token.status().message()));
      }
      if (!token->has_value()) {
        return absl::UnauthenticatedError(absl::StrCat("token ", p.token_id, " no longer exists"));
      }
      if ((*token)->token.has_revoked_at()) {
        return absl::UnauthenticatedError(absl::StrCat("token ", p.token_id, " was revoked"));
      }
    }
    if (!p.fingerprint.empty() && revocations != nullptr &&
        revocations->IsRevoked(p.serial, p.fingerprint)) {
      return absl::UnauthenticatedError(
          absl::StrCat("certificate ", p.fingerprint, " was revoked"));
    }
    return absl::OkStatus();
  };
}

}  // namespace smbfleet::collector
