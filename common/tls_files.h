#ifndef SMBFLEET_COMMON_TLS_FILES_H_
#define SMBFLEET_COMMON_TLS_FILES_H_

#include <string>

namespace smbfleet {

// Where a component's mutual TLS material lives.
struct TlsFiles {
  std::string cert;  // PEM certificate chain path
  std::string key;   // PEM private key path
  std::string ca;    // PEM CA bundle used to verify the peer
};

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_TLS_FILES_H_
