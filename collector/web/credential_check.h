#ifndef SMBFLEET_COLLECTOR_WEB_CREDENTIAL_CHECK_H_
#define SMBFLEET_COLLECTOR_WEB_CREDENTIAL_CHECK_H_

#include <functional>

#include "absl/time/time.h"
#include "collector/auth/authenticate.h"
#include "collector/store/identity_store.h"
#include "collector/web/session_store.h"

namespace smbfleet::collector {

// Whether the credential a session was made from still stands: UNAUTHENTICATED when it expired,
// when its API token is revoked or gone from `identity`, or when its certificate is revoked
// (`revocations`); UNAVAILABLE when the store cannot be read. Either may be null (not checked).
SessionStore::CredentialCheck CredentialStillStands(IdentityStore* identity,
                                                    const RevocationChecker* revocations,
                                                    std::function<absl::Time()> clock = absl::Now);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_WEB_CREDENTIAL_CHECK_H_
