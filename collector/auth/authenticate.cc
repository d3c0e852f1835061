#include "collector/auth/authenticate.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "grpcpp/security/auth_context.h"

namespace smbfleet::collector {
namespace {

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

constexpr absl::string_view kAgent = "agent";
constexpr absl::string_view kOperator = "operator";

// Every certificate in a PEM text, in order.
std::vector<X509Ptr> ParseAll(const std::string& pem) {
  std::vector<X509Ptr> out;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return out;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the end of the text reads as an error
  return out;
}

// "O=smbfleet, OU=agent, CN=fs01" (RFC 2253 order reversed for reading, escaped by OpenSSL).
std::string Subject(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio) return "?";
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0,
                     XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return len > 0 ? std::string(data, static_cast<size_t>(len)) : std::string("(empty subject)");
}

// The SHA-256 of `text`, 32 raw bytes: the key a certificate's checks are kept under.
std::string Sha256(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    return text;  // never expected; the PEM itself is an exact key too
  }
  return std::string(reinterpret_cast<const char*>(digest), len);
}

// OK when `ca` issued `cert`: names and key identifiers match, and the signature checks
// against the CA's public key (a CA with the same name but another key does not pass).
bool IssuedBy(X509* ca, X509* cert) {
  if (X509_check_issued(ca, cert) != X509_V_OK) return false;
  EVP_PKEY* key = X509_get0_pubkey(ca);
  return key != nullptr && X509_verify(cert, key) == 1;
}

}  // namespace

struct Authenticator::Issuers {
  std::vector<X509Ptr> agents;
  std::vector<X509Ptr> operators;
};

Authenticator::Authenticator(std::unique_ptr<Issuers> issuers) : issuers_(std::move(issuers)) {}
Authenticator::~Authenticator() = default;

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(
    const IssuerCertificates& issuers) {
  auto parsed = std::make_unique<Issuers>();
  for (auto [pems, out, what] :
       {std::tuple{&issuers.agent_pems, &parsed->agents, "identity.agent_issuers"},
        std::tuple{&issuers.operator_pems, &parsed->operators, "identity.operator_issuers"}}) {
    for (size_t i = 0; i < pems->size(); ++i) {
      std::vector<X509Ptr> certs = ParseAll((*pems)[i]);
      if (certs.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, "[", i, "]: no PEM CA certificate in the file"));
      }
      for (X509Ptr& c : certs) {
        if (X509_check_ca(c.get()) == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, "[", i, "]: '", Subject(c.get()), "' is not a CA certificate"));
        }
        out->push_back(std::move(c));
      }
    }
  }
  for (const X509Ptr& a : parsed->agents) {
    for (const X509Ptr& o : parsed->operators) {
      if (X509_cmp(a.get(), o.get()) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("identity: CA '", Subject(a.get()),
                         "' is in both agent_issuers and operator_issuers; a CA issues one kind"));
      }
    }
  }
  return std::unique_ptr<Authenticator>(new Authenticator(std::move(parsed)));
}

bool Authenticator::kind_from_issuer() const {
  return !issuers_->agents.empty() || !issuers_->operators.empty();
}

struct Authenticator::Checked {
  absl::StatusOr<Principal> principal;
  std::string subject;
  std::string serial;
  std::string fingerprint;
};

Authenticator::Checked Authenticator::Check(const std::string& pem) const {
  Checked out;
  std::vector<X509Ptr> certs = ParseAll(pem);
  if (certs.empty()) {
    out.principal = absl::UnauthenticatedError("peer certificate cannot be parsed");
    return out;
  }
  X509* cert = certs[0].get();
  out.subject = Subject(cert);
  const std::string& subject = out.subject;

  // A client certificate must say it is one. Our CAs always write the extension, so a
  // certificate without it was made elsewhere, for something else: refused as well.
  uint32_t flags = X509_get_extension_flags(cert);
  if ((flags & EXFLAG_XKUSAGE) == 0) {
    out.principal = absl::UnauthenticatedError(
        absl::StrCat("certificate '", subject,
                     "' has no extended key usage; a client certificate needs clientAuth"));
    return out;
  }
  if ((X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT) == 0) {
    out.principal = absl::UnauthenticatedError(absl::StrCat(
        "certificate '", subject, "' is not for client authentication (no clientAuth usage)"));
    return out;
  }

  absl::StatusOr<PeerIdentity> identity = IdentityFromPem(pem);
  if (!identity.ok()) {
    out.principal = identity.status();
    return out;
  }
  const PeerIdentity& id = *identity;
  out.serial = id.serial;
  out.fingerprint = id.fingerprint;
  Principal p = PrincipalFromIdentity(id);
  if (kind_from_issuer()) {
    bool by_agents = false;
    bool by_operators = false;
    for (const X509Ptr& ca : issuers_->agents) by_agents = by_agents || IssuedBy(ca.get(), cert);
    for (const X509Ptr& ca : issuers_->operators) {
      by_operators = by_operators || IssuedBy(ca.get(), cert);
    }
    if (!by_agents && !by_operators) {
      out.principal = absl::UnauthenticatedError(
          absl::StrCat("certificate '", subject, "' (serial ", id.serial,
                       ") was not issued by a CA of identity.agent_issuers or "
                       "identity.operator_issuers"));
      return out;
    }
    const absl::string_view kind = by_agents ? kAgent : kOperator;
    // The OU may say the kind too (ca.sh writes it); it may not say another one.
    if (!id.kind.empty() && (id.kind == kAgent || id.kind == kOperator) && id.kind != kind) {
      out.principal =
          absl::UnauthenticatedError(absl::StrCat("certificate '", subject, "' says OU=", id.kind,
                                                  " but was issued by an ", kind, "s CA; refused"));
      return out;
    }
    p.kind = by_agents ? PrincipalKind::kAgent : PrincipalKind::kOperator;
    p.kind_text = std::string(kind);
    if (p.kind == PrincipalKind::kAgent) p.roles.clear();
    // An operator certificate whose first OU is a role rather than the kind: every OU is a role.
    if (p.kind == PrincipalKind::kOperator && id.kind != kOperator && !id.kind.empty()) {
      p.roles.insert(p.roles.begin(), id.kind);
    }
  }
  out.principal = std::move(p);
  return out;
}

std::shared_ptr<const Authenticator::Checked> Authenticator::CheckedOf(
    const std::string& pem) const {
  const std::string key = Sha256(pem);
  {
    absl::ReaderMutexLock lock(&checked_mu_);
    auto it = checked_.find(key);
    if (it != checked_.end()) return it->second;
  }
  auto checked = std::make_shared<const Checked>(Check(pem));
  absl::MutexLock lock(&checked_mu_);
  if (checked_.size() >= kMaxCheckedCertificates) checked_.clear();
  checked_.emplace(key, checked);
  return checked;
}

absl::StatusOr<Principal> Authenticator::FromCertificate(const std::string& pem) const {
  std::shared_ptr<const Checked> checked = CheckedOf(pem);
  if (!checked->principal.ok()) return checked->principal.status();
  const Principal& p = *checked->principal;
  if (revocations_ != nullptr && revocations_->IsRevoked(checked->serial, checked->fingerprint)) {
    return absl::UnauthenticatedError(absl::StrCat("certificate '", checked->subject, "' (serial ",
                                                   checked->serial, ") has been revoked"));
  }
  // Only an agent's name is a host; an operator who happens to share it is not that host.
  if (revocations_ != nullptr && p.kind == PrincipalKind::kAgent &&
      revocations_->IsHostRevoked(p.name)) {
    return absl::UnauthenticatedError(
        absl::StrCat("host '", p.name, "' has been revoked (certificate '", checked->subject,
                     "', serial ", checked->serial, ")"));
  }
  return p;
}

absl::StatusOr<Principal> Authenticator::FromAuthorization(absl::string_view header) const {
  constexpr absl::string_view kBearer = "bearer ";
  if (header.size() <= kBearer.size() ||
      !absl::EqualsIgnoreCase(header.substr(0, kBearer.size()), kBearer)) {
    return absl::UnauthenticatedError(
        "authorization metadata: expected 'Bearer <token>' (the value is not shown)");
  }
  if (tokens_ == nullptr) {
    return absl::UnauthenticatedError("bearer tokens are not accepted by this collector");
  }
  return tokens_->VerifyToken(absl::StripAsciiWhitespace(header.substr(kBearer.size())));
}

absl::StatusOr<Principal> Authenticator::Authenticate(
    const grpc::ServerContextBase& context) const {
  auto auth = context.auth_context();
  const bool has_cert =
      auth != nullptr && !auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
  const auto& metadata = context.client_metadata();
  auto token = metadata.find("authorization");
  const bool has_token = token != metadata.end();
  if (has_cert && has_token) {
    return absl::UnauthenticatedError(
        "both a client certificate and a bearer token were presented; present one of them");
  }
  if (has_token) {
    if (metadata.count("authorization") > 1) {
      return absl::UnauthenticatedError("more than one authorization metadata entry");
    }
    return FromAuthorization(absl::string_view(token->second.data(), token->second.size()));
  }
  if (!has_cert) return Principal::Anonymous();
  if (!auth->IsPeerAuthenticated()) {
    return absl::UnauthenticatedError("client certificate was not verified");
  }
  auto pems = auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  return FromCertificate(std::string(pems[0].data(), pems[0].size()));
}

}  // namespace smbfleet::collector
