#include "common/approval_signing.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/merkle.h"
#include "common/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace smbfleet {
namespace {

constexpr size_t kPublicKeySize = 32;
constexpr size_t kSignatureSize = 64;
constexpr absl::string_view kPublicKeyPrefix = "ed25519:";

struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct PkeyCtxDeleter {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;

absl::StatusOr<Pkey> ReadPrivateKey(absl::string_view pem) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Pkey key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) return absl::InvalidArgumentError("not an unencrypted PEM private key");
  if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    return absl::InvalidArgumentError("the private key is not an Ed25519 key");
  }
  return key;
}

absl::StatusOr<Ed25519Key> KeyOf(const Pkey& key) {
  Ed25519Key out;
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return absl::InternalError("cannot encode the Ed25519 private key");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(google-runtime-int): OpenSSL's type
  out.private_pem.assign(data, static_cast<size_t>(len));
  size_t raw_len = kPublicKeySize;
  out.public_raw.resize(kPublicKeySize);
  if (EVP_PKEY_get_raw_public_key(
          key.get(), reinterpret_cast<unsigned char*>(out.public_raw.data()), &raw_len) != 1 ||
      raw_len != kPublicKeySize) {
    return absl::InternalError("cannot read the Ed25519 public key");
  }
  return out;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

void SortSettings(v1::HostOrder& host) {
  auto* settings = host.mutable_settings();
  std::sort(settings->begin(), settings->end(),
            [](const v1::SettingChange& a, const v1::SettingChange& b) {
              return std::tie(a.setting(), a.share()) < std::tie(b.setting(), b.share());
            });
}

// Sorts `hosts` by name and each one's settings; INVALID_ARGUMENT names an empty or repeated host.
absl::Status SortHosts(google::protobuf::RepeatedPtrField<v1::HostOrder>& hosts) {
  std::sort(hosts.begin(), hosts.end(),
            [](const v1::HostOrder& a, const v1::HostOrder& b) { return a.host() < b.host(); });
  for (int i = 0; i < hosts.size(); ++i) {
    if (hosts[i].host().empty()) {
      return absl::InvalidArgumentError("approval payload: a host order names no host");
    }
    if (i > 0 && hosts[i].host() == hosts[i - 1].host()) {
      return absl::InvalidArgumentError(
          absl::StrCat("approval payload: host '", hosts[i].host(), "' appears twice"));
    }
    SortSettings(hosts[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Ed25519Key> GenerateEd25519Key() {
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return absl::InternalError("cannot generate an Ed25519 key");
  }
  return KeyOf(Pkey(raw));
}

absl::StatusOr<Ed25519Key> Ed25519KeyFromPem(absl::string_view private_pem) {
  ASSIGN_OR_RETURN(Pkey key, ReadPrivateKey(private_pem));
  return KeyOf(key);
}

std::string KeyId(absl::string_view public_raw) { return Sha256Hex(public_raw).substr(0, 16); }

std::string PublicKeyText(absl::string_view public_raw) {
  return absl::StrCat(kPublicKeyPrefix, absl::Base64Escape(public_raw));
}

absl::StatusOr<std::string> ParsePublicKeyText(absl::string_view text) {
  if (!absl::StartsWith(text, kPublicKeyPrefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("public key does not start with '", kPublicKeyPrefix, "'"));
  }
  std::string raw;
  if (!absl::Base64Unescape(text.substr(kPublicKeyPrefix.size()), &raw)) {
    return absl::InvalidArgumentError("public key is not valid base64 after 'ed25519:'");
  }
  if (raw.size() != kPublicKeySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("public key has ", raw.size(), " bytes, an Ed25519 key has ", kPublicKeySize));
  }
  return raw;
}

absl::StatusOr<std::string> SignEd25519(absl::string_view private_pem, absl::string_view message) {
  ASSIGN_OR_RETURN(Pkey key, ReadPrivateKey(private_pem));
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  std::string sig(kSignatureSize, '\0');
  size_t sig_len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return absl::InternalError("Ed25519 signing failed");
  }
  sig.resize(sig_len);
  return sig;
}

absl::Status VerifyEd25519(absl::string_view public_raw, absl::string_view message,
                           absl::string_view signature) {
  auto bad = [] { return absl::PermissionDeniedError("signature does not verify"); };
  if (public_raw.size() != kPublicKeySize || signature.size() != kSignatureSize) return bad();
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(public_raw.data()),
                                       public_raw.size()));
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) {
    return bad();
  }
  if (EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) != 1) {
    return bad();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CanonicalApprovalPayload(v1::ApprovalPayload payload) {
  if (payload.change_id().empty()) {
    return absl::InvalidArgumentError("approval payload: change_id is empty");
  }
  if (payload.nonce().empty()) {
    return absl::InvalidArgumentError("approval payload: nonce is empty");
  }
  if (!payload.has_not_after()) {
    return absl::InvalidArgumentError("approval payload: not_after is unset");
  }
  if (payload.format() == kApprovalFormatV2) {
    if (!payload.hosts().empty()) {
      return absl::InvalidArgumentError(
          "approval payload: a v2 payload names its hosts only by hosts_root, not in hosts");
    }
    if (payload.hosts_root().size() != kMerkleHashSize) {
      return absl::InvalidArgumentError(absl::StrCat("approval payload: hosts_root is ",
                                                     payload.hosts_root().size(), " bytes, want ",
                                                     kMerkleHashSize));
    }
    if (payload.host_count() == 0) {
      return absl::InvalidArgumentError("approval payload: host_count is 0");
    }
    return Serialize(payload);
  }
  if (!payload.format().empty() && payload.format() != kApprovalFormatV1) {
    return absl::InvalidArgumentError(
        absl::StrCat("approval payload has format '", payload.format().substr(0, 64),
                     "', expected '", kApprovalFormatV1, "' or '", kApprovalFormatV2, "'"));
  }
  if (payload.hosts().empty()) {
    return absl::InvalidArgumentError("approval payload: no hosts");
  }
  if (!payload.hosts_root().empty() || payload.host_count() != 0) {
    return absl::InvalidArgumentError(
        "approval payload: a v1 payload lists its hosts and has no hosts_root or host_count");
  }
  payload.set_format(std::string(kApprovalFormatV1));
  RETURN_IF_ERROR(SortHosts(*payload.mutable_hosts()));
  return Serialize(payload);
}

absl::StatusOr<v1::ApprovalPayload> ParseApprovalPayload(absl::string_view bytes) {
  v1::ApprovalPayload payload;
  if (!payload.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("approval payload is not a valid ApprovalPayload message");
  }
  if (payload.format() != kApprovalFormatV1 && payload.format() != kApprovalFormatV2) {
    return absl::InvalidArgumentError(
        absl::StrCat("approval payload has format '", payload.format().substr(0, 64),
                     "', expected '", kApprovalFormatV1, "' or '", kApprovalFormatV2, "'"));
  }
  ASSIGN_OR_RETURN(std::string canonical, CanonicalApprovalPayload(payload));
  if (canonical != bytes) {
    return absl::InvalidArgumentError("approval payload is not in canonical encoding");
  }
  return payload;
}

absl::StatusOr<std::string> CanonicalHostOrder(v1::HostOrder host) {
  if (host.host().empty()) {
    return absl::InvalidArgumentError("approval payload: a host order names no host");
  }
  SortSettings(host);
  return Serialize(host);
}

absl::StatusOr<ApprovalHostTree> ApprovalHostTree::Build(std::vector<v1::HostOrder> hosts) {
  if (hosts.empty()) return absl::InvalidArgumentError("approval payload: no hosts");
  google::protobuf::RepeatedPtrField<v1::HostOrder> sorted(std::make_move_iterator(hosts.begin()),
                                                           std::make_move_iterator(hosts.end()));
  RETURN_IF_ERROR(SortHosts(sorted));
  std::vector<std::string> canonical, leaves;
  canonical.reserve(sorted.size());
  leaves.reserve(sorted.size());
  for (const v1::HostOrder& h : sorted) {
    canonical.push_back(Serialize(h));  // settings sorted above: CanonicalHostOrder's bytes
    leaves.push_back(MerkleLeafHash(canonical.back()));
  }
  return ApprovalHostTree(std::vector<v1::HostOrder>(sorted.begin(), sorted.end()),
                          std::move(canonical), MerkleTree(std::move(leaves)));
}

std::optional<size_t> ApprovalHostTree::IndexOf(absl::string_view host) const {
  auto it = std::lower_bound(hosts_.begin(), hosts_.end(), host,
                             [](const v1::HostOrder& h, absl::string_view name) {
                               return absl::string_view(h.host()) < name;
                             });
  if (it == hosts_.end() || it->host() != host) return std::nullopt;
  return static_cast<size_t>(it - hosts_.begin());
}

absl::Status VerifyHostOrderInclusion(const v1::ApprovalPayload& payload,
                                      absl::string_view host_order, size_t index,
                                      const std::vector<std::string>& proof) {
  return VerifyMerkleInclusion(MerkleLeafHash(host_order), index, payload.host_count(), proof,
                               payload.hosts_root());
}

}  // namespace smbfleet
