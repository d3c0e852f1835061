#ifndef SMBFLEET_AGENT_BENCH_CRYPTO_OP_H_
#define SMBFLEET_AGENT_BENCH_CRYPTO_OP_H_

// One SMB message's worth of crypto through OpenSSL EVP, the unit the benchmark times: an AEAD
// encryption (AES-CCM/GCM: nonce, 32 bytes of transform-header AAD, payload in place, 16-byte
// tag) or a signature (AES-CMAC, AES-GMAC, HMAC-SHA256 truncated to 16 bytes, as SMB2/3 sign).
// The key is set once, as an SMB stack keeps it per session; each message gets a fresh nonce.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::bench {

inline constexpr size_t kTagBytes = 16;
inline constexpr size_t kAadBytes = 32;  // SMB2 TRANSFORM_HEADER after the signature field

class CryptoOp {
 public:
  // kPerSession is what an SMB stack does and what the benchmark measures. kPerMessage sets
  // the key (and the nonce length) again with every AEAD message, as `openssl speed -evp`
  // does; it exists to compare with that tool. MACs keep their key either way, as speed's
  // -hmac and -cmac loops do.
  enum class KeyUse { kPerSession, kPerMessage };

  // Key sizes: 16 bytes for AES-128-* and the MACs in SMB (HMAC-SHA256 keys are 16-byte
  // session keys too), 32 bytes for AES-256-*. InvalidArgument for a wrong key size or an
  // algorithm the benchmark does not cover; Internal when OpenSSL refuses.
  static absl::StatusOr<std::unique_ptr<CryptoOp>> Create(smbfleet::v1::CryptoAlgorithm algorithm,
                                                          absl::Span<const uint8_t> key,
                                                          KeyUse key_use = KeyUse::kPerSession);
  static size_t KeyBytes(smbfleet::v1::CryptoAlgorithm algorithm);    // 0 = not covered
  static size_t NonceBytes(smbfleet::v1::CryptoAlgorithm algorithm);  // 0 = none (CMAC, HMAC)

  virtual ~CryptoOp() = default;

  // Protects one message. AEAD: encrypts `message` in place, authenticating `aad`; MACs: signs
  // `message` (aad ignored). Writes kTagBytes to `tag`. `nonce` must be NonceBytes() long.
  virtual absl::Status Protect(absl::Span<const uint8_t> nonce, absl::Span<const uint8_t> aad,
                               absl::Span<uint8_t> message, uint8_t* tag) = 0;

  smbfleet::v1::CryptoAlgorithm algorithm() const { return algorithm_; }

 protected:
  explicit CryptoOp(smbfleet::v1::CryptoAlgorithm algorithm) : algorithm_(algorithm) {}

 private:
  smbfleet::v1::CryptoAlgorithm algorithm_;
};

}  // namespace smbfleet::agent::bench

#endif  // SMBFLEET_AGENT_BENCH_CRYPTO_OP_H_
