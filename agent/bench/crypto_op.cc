#include "agent/bench/crypto_op.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace smbfleet::agent::bench {
namespace {

using ::smbfleet::v1::CryptoAlgorithm;

absl::Status OpenSslError(const char* what, CryptoAlgorithm algorithm) {
  return absl::InternalError(absl::StrCat("OpenSSL ", what, " failed for ",
                                          smbfleet::v1::CryptoAlgorithm_Name(algorithm)));
}

bool IsCcm(CryptoAlgorithm a) {
  return a == smbfleet::v1::AES_128_CCM || a == smbfleet::v1::AES_256_CCM;
}

class AeadOp : public CryptoOp {
 public:
  // `rekey` holds the key when it is set with every message (KeyUse::kPerMessage), else empty.
  AeadOp(CryptoAlgorithm algorithm, EVP_CIPHER_CTX* ctx, std::vector<uint8_t> rekey)
      : CryptoOp(algorithm), ctx_(ctx), rekey_(std::move(rekey)) {}
  ~AeadOp() override { EVP_CIPHER_CTX_free(ctx_); }

  absl::Status Protect(absl::Span<const uint8_t> nonce, absl::Span<const uint8_t> aad,
                       absl::Span<uint8_t> message, uint8_t* tag) override {
    if (nonce.size() != NonceBytes(algorithm())) {
      return absl::InvalidArgumentError(
          absl::StrCat("nonce: ", nonce.size(), " bytes, want ", NonceBytes(algorithm())));
    }
    if (message.size() > static_cast<size_t>(INT_MAX) || aad.size() > 1024) {
      return absl::InvalidArgumentError("message or aad too large");
    }
    int len = 0;
    if (!rekey_.empty() && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_IVLEN,
                                               static_cast<int>(nonce.size()), nullptr) != 1) {
      return OpenSslError("SET_IVLEN", algorithm());
    }
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, rekey_.empty() ? nullptr : rekey_.data(),
                           nonce.data()) != 1) {
      return OpenSslError("EncryptInit(nonce)", algorithm());
    }
    // CCM needs the payload length before the AAD.
    if (IsCcm(algorithm()) &&
        EVP_EncryptUpdate(ctx_, nullptr, &len, nullptr, static_cast<int>(message.size())) != 1) {
      return OpenSslError("EncryptUpdate(length)", algorithm());
    }
    if (!aad.empty() &&
        EVP_EncryptUpdate(ctx_, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) {
      return OpenSslError("EncryptUpdate(aad)", algorithm());
    }
    if (EVP_EncryptUpdate(ctx_, message.data(), &len, message.data(),
                          static_cast<int>(message.size())) != 1) {
      return OpenSslError("EncryptUpdate", algorithm());
    }
    if (EVP_EncryptFinal_ex(ctx_, message.data() + len, &len) != 1) {
      return OpenSslError("EncryptFinal", algorithm());
    }
    if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, kTagBytes, tag) != 1) {
      return OpenSslError("GET_TAG", algorithm());
    }
    return absl::OkStatus();
  }

 private:
  EVP_CIPHER_CTX* ctx_;
  std::vector<uint8_t> rekey_;
};

class MacOp : public CryptoOp {
 public:
  MacOp(CryptoAlgorithm algorithm, EVP_MAC_CTX* ctx) : CryptoOp(algorithm), ctx_(ctx) {}
  ~MacOp() override { EVP_MAC_CTX_free(ctx_); }

  absl::Status Protect(absl::Span<const uint8_t> nonce, absl::Span<const uint8_t> aad,
                       absl::Span<uint8_t> message, uint8_t* tag) override {
    if (nonce.size() != NonceBytes(algorithm())) {
      return absl::InvalidArgumentError(
          absl::StrCat("nonce: ", nonce.size(), " bytes, want ", NonceBytes(algorithm())));
    }
    // A NULL key restarts the MAC with the key set at creation.
    OSSL_PARAM params[2] = {OSSL_PARAM_END, OSSL_PARAM_END};
    if (!nonce.empty()) {
      params[0] = OSSL_PARAM_construct_octet_string(
          OSSL_MAC_PARAM_IV, const_cast<uint8_t*>(nonce.data()), nonce.size());
    }
    if (EVP_MAC_init(ctx_, nullptr, 0, params) != 1) {
      return OpenSslError("MAC_init", algorithm());
    }
    if (EVP_MAC_update(ctx_, message.data(), message.size()) != 1) {
      return OpenSslError("MAC_update", algorithm());
    }
    uint8_t out[EVP_MAX_MD_SIZE];
    size_t out_len = 0;
    if (EVP_MAC_final(ctx_, out, &out_len, sizeof(out)) != 1 || out_len < kTagBytes) {
      return OpenSslError("MAC_final", algorithm());
    }
    std::memcpy(tag, out, kTagBytes);  // SMB2 keeps the first 16 bytes of HMAC-SHA256
    return absl::OkStatus();
  }

 private:
  EVP_MAC_CTX* ctx_;
};

absl::StatusOr<std::unique_ptr<CryptoOp>> NewAead(CryptoAlgorithm algorithm, const char* name,
                                                  absl::Span<const uint8_t> key,
                                                  CryptoOp::KeyUse key_use) {
  EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, name, nullptr);
  if (cipher == nullptr) {
    return OpenSslError("CIPHER_fetch", algorithm);
  }
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  std::vector<uint8_t> rekey;
  if (key_use == CryptoOp::KeyUse::kPerMessage) rekey.assign(key.begin(), key.end());
  auto op = std::make_unique<AeadOp>(algorithm, ctx, std::move(rekey));  // owns ctx
  bool ok = ctx != nullptr && EVP_EncryptInit_ex(ctx, cipher, nullptr, nullptr, nullptr) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN,
                                static_cast<int>(CryptoOp::NonceBytes(algorithm)), nullptr) == 1 &&
            (!IsCcm(algorithm) ||
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagBytes, nullptr) == 1) &&
            EVP_EncryptInit_ex(ctx, nullptr, nullptr, key.data(), nullptr) == 1;
  EVP_CIPHER_free(cipher);
  if (!ok) {
    return OpenSslError("cipher setup", algorithm);
  }
  return op;
}

absl::StatusOr<std::unique_ptr<CryptoOp>> NewMac(CryptoAlgorithm algorithm, const char* mac_name,
                                                 const char* param_name, const char* param_value,
                                                 absl::Span<const uint8_t> key) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, mac_name, nullptr);
  if (mac == nullptr) {
    return OpenSslError("MAC_fetch", algorithm);
  }
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  if (ctx == nullptr) {
    return OpenSslError("MAC_CTX_new", algorithm);
  }
  auto op = std::make_unique<MacOp>(algorithm, ctx);
  std::string value = param_value;
  OSSL_PARAM params[3] = {OSSL_PARAM_construct_utf8_string(param_name, value.data(), 0),
                          OSSL_PARAM_END, OSSL_PARAM_END};
  uint8_t zero_iv[12] = {0};
  if (algorithm == smbfleet::v1::AES_128_GMAC) {
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, zero_iv, sizeof(zero_iv));
  }
  if (EVP_MAC_init(ctx, key.data(), key.size(), params) != 1) {
    return OpenSslError("MAC_init(key)", algorithm);
  }
  return op;
}

}  // namespace

size_t CryptoOp::KeyBytes(CryptoAlgorithm algorithm) {
  switch (algorithm) {
    case smbfleet::v1::AES_128_CCM:
    case smbfleet::v1::AES_128_GCM:
    case smbfleet::v1::AES_128_CMAC:
    case smbfleet::v1::AES_128_GMAC:
    case smbfleet::v1::HMAC_SHA256:
      return 16;
    case smbfleet::v1::AES_256_CCM:
    case smbfleet::v1::AES_256_GCM:
      return 32;
    default:
      return 0;
  }
}

size_t CryptoOp::NonceBytes(CryptoAlgorithm algorithm) {
  switch (algorithm) {
    case smbfleet::v1::AES_128_CCM:
    case smbfleet::v1::AES_256_CCM:
      return 11;  // MS-SMB2: CCM uses the first 11 bytes of the transform header nonce
    case smbfleet::v1::AES_128_GCM:
    case smbfleet::v1::AES_256_GCM:
    case smbfleet::v1::AES_128_GMAC:
      return 12;
    default:
      return 0;
  }
}

absl::StatusOr<std::unique_ptr<CryptoOp>> CryptoOp::Create(CryptoAlgorithm algorithm,
                                                           absl::Span<const uint8_t> key,
                                                           KeyUse key_use) {
  size_t want = KeyBytes(algorithm);
  if (want == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "algorithm ", smbfleet::v1::CryptoAlgorithm_Name(algorithm), " is not benchmarked"));
  }
  if (key.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(smbfleet::v1::CryptoAlgorithm_Name(algorithm),
                                                   " key: ", key.size(), " bytes, want ", want));
  }
  switch (algorithm) {
    case smbfleet::v1::AES_128_CCM:
      return NewAead(algorithm, "AES-128-CCM", key, key_use);
    case smbfleet::v1::AES_256_CCM:
      return NewAead(algorithm, "AES-256-CCM", key, key_use);
    case smbfleet::v1::AES_128_GCM:
      return NewAead(algorithm, "AES-128-GCM", key, key_use);
    case smbfleet::v1::AES_256_GCM:
      return NewAead(algorithm, "AES-256-GCM", key, key_use);
    case smbfleet::v1::AES_128_CMAC:
      return NewMac(algorithm, OSSL_MAC_NAME_CMAC, OSSL_MAC_PARAM_CIPHER, "AES-128-CBC", key);
    case smbfleet::v1::AES_128_GMAC:
      return NewMac(algorithm, OSSL_MAC_NAME_GMAC, OSSL_MAC_PARAM_CIPHER, "AES-128-GCM", key);
    case smbfleet::v1::HMAC_SHA256:
      return NewMac(algorithm, OSSL_MAC_NAME_HMAC, OSSL_MAC_PARAM_DIGEST, "SHA256", key);
    default:
      return absl::InvalidArgumentError("unreachable");
  }
}

}  // namespace smbfleet::agent::bench
