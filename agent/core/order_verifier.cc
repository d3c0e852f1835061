#include "agent/core/order_verifier.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/approval_signing.h"
#include "common/status_macros.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::ApprovalPayload;
using smbfleet::v1::ChangeOrder;
using smbfleet::v1::HostOrder;
using smbfleet::v1::OrderSignature;

constexpr size_t kEd25519KeySize = 32;
// Names from the collector are echoed in refusals; bounded so that a hostile one cannot flood
// the ack or the log.
constexpr size_t kMaxEchoedName = 64;

std::string Echo(absl::string_view s) {
  return absl::StrCat("'", absl::CHexEscape(s.substr(0, kMaxEchoedName)),
                      s.size() > kMaxEchoedName ? "...'" : "'");
}

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

absl::Status Refused(absl::string_view why) {
  return absl::PermissionDeniedError(absl::StrCat("approval check failed: ", why, "; not applied"));
}

// Why signature `index` (1-based) does not count, or "" when it does; `counted` holds the
// approvers already counted.
std::string SignatureProblem(const OrderSignature& sig, int index, absl::string_view bytes,
                             const ApprovalPayload& payload, const TrustedKeys& keys,
                             const std::set<std::string>& counted, std::string* approver) {
  std::string who = absl::StrCat("signature ", index, " (approver ", Echo(sig.approver()), ", key ",
                                 Echo(sig.key_id()), ")");
  auto it = keys.find(sig.key_id());
  if (it == keys.end()) return absl::StrCat(who, ": key not trusted by this host");
  const TrustedKey& key = it->second;
  if (absl::AsciiStrToLower(key.approver) != absl::AsciiStrToLower(sig.approver())) {
    return absl::StrCat(who, ": the key belongs to ", Echo(key.approver));
  }
  if (!VerifyEd25519(key.public_raw, bytes, sig.signature()).ok()) {
    return absl::StrCat(who, ": does not verify over the payload");
  }
  std::string name = absl::AsciiStrToLower(key.approver);
  if (name == absl::AsciiStrToLower(payload.proposed_by())) {
    return absl::StrCat(who, ": the proposer's own approval does not count");
  }
  if (counted.count(name) > 0) {
    return absl::StrCat(who, ": the same approver again does not count");
  }
  *approver = std::move(name);
  return "";
}

// This host's order from the payload: v1 lists every host; v2 commits to them by hosts_root
// and the order carries this host's own, with its inclusion proof.
absl::StatusOr<HostOrder> OwnHostOrder(const ChangeOrder& order, const ApprovalPayload& payload,
                                       const std::string& host) {
  if (payload.format() != kApprovalFormatV2) {
    auto mine = std::find_if(payload.hosts().begin(), payload.hosts().end(),
                             [&](const HostOrder& h) { return h.host() == host; });
    if (mine == payload.hosts().end()) {
      return absl::PermissionDeniedError(absl::StrCat("this host (", Echo(host),
                                                      ") is not among the ", payload.hosts_size(),
                                                      " host(s) the approvers signed for"));
    }
    return *mine;
  }
  HostOrder mine;
  if (order.host_order().empty() || !mine.ParseFromString(order.host_order())) {
    return absl::PermissionDeniedError("the order carries no valid host order for this host");
  }
  absl::StatusOr<std::string> canonical = CanonicalHostOrder(mine);
  if (!canonical.ok() || *canonical != order.host_order()) {
    return absl::PermissionDeniedError("the order's host order is not in canonical encoding");
  }
  if (mine.host() != host) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the order's host order is for ", Echo(mine.host()), ", not this host (", Echo(host), ")"));
  }
  const std::vector<std::string> proof(order.host_proof().begin(), order.host_proof().end());
  if (absl::Status s =
          VerifyHostOrderInclusion(payload, order.host_order(), order.host_index(), proof);
      !s.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("this host's order is not among the ", payload.host_count(),
                     " host(s) the approvers signed for (", s.message(), ")"));
  }
  return mine;
}

}  // namespace

TrustedKeys PinnedKeys(const TrustConfig& trust) {
  TrustedKeys keys;
  for (const auto& [name, raw] : trust.approvers) keys[KeyId(raw)] = TrustedKey{name, raw};
  return keys;
}

TrustedKeys WithApproverSet(TrustedKeys base, const smbfleet::v1::ApproverSet& set) {
  for (const smbfleet::v1::ApproverKey& k : set.approvers()) {
    if (k.public_key().size() != kEd25519KeySize || k.name().empty()) continue;
    base.emplace(KeyId(k.public_key()), TrustedKey{k.name(), k.public_key()});
  }
  return base;
}

absl::StatusOr<smbfleet::v1::ApproverSet> VerifyApproverSet(
    const smbfleet::v1::SignedApproverSet& signed_set, absl::string_view root_public_raw) {
  if (root_public_raw.empty()) {
    return absl::PermissionDeniedError(
        "approver set refused: no root key is configured on this host (trust.root)");
  }
  if (!VerifyEd25519(root_public_raw, signed_set.approver_set(), signed_set.signature()).ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "approver set refused: the signature (root key ", Echo(signed_set.root_key_id()),
        ") does not verify with this host's trust.root (key ", KeyId(root_public_raw), ")"));
  }
  smbfleet::v1::ApproverSet set;
  if (!set.ParseFromString(signed_set.approver_set())) {
    return absl::InvalidArgumentError(
        "approver set refused: the signed bytes are not an ApproverSet");
  }
  return set;
}

absl::StatusOr<VerifiedOrder> VerifyOrder(const ChangeOrder& order, const TrustedKeys& keys,
                                          const OrderCheck& check) {
  if (keys.empty()) {
    return Refused(
        "no approver keys configured (trust.approvers, or an approver set signed by trust.root)");
  }
  if (order.approval_payload().empty()) return Refused("the order carries no approval payload");
  absl::StatusOr<ApprovalPayload> parsed = ParseApprovalPayload(order.approval_payload());
  if (!parsed.ok()) return Refused(parsed.status().message());
  ApprovalPayload& payload = *parsed;
  if (payload.change_id() != order.change_id() || payload.version() != order.version()) {
    return Refused(absl::StrCat("the payload is for change ", Echo(payload.change_id()), " v",
                                payload.version(), ", the order is change ",
                                Echo(order.change_id()), " v", order.version()));
  }
  const absl::Time not_after = TimeOf(payload.not_after());
  if (check.now >= not_after) {
    return absl::DeadlineExceededError(absl::StrCat(
        "order expired at ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", not_after, absl::UTCTimeZone()),
        "; not applied"));
  }
  const std::string host = absl::AsciiStrToLower(check.host);
  if (host.empty()) return Refused("this agent does not know its own host identity");
  absl::StatusOr<HostOrder> mine = OwnHostOrder(order, payload, host);
  if (!mine.ok()) return Refused(mine.status().message());

  const uint32_t needed = std::max({check.min_approvals, payload.approvals_required(), 1u});
  std::set<std::string> counted;
  std::vector<std::string> problems;
  for (int i = 0; i < order.signatures_size(); ++i) {
    std::string approver;
    std::string problem = SignatureProblem(order.signatures(i), i + 1, order.approval_payload(),
                                           payload, keys, counted, &approver);
    if (problem.empty()) {
      counted.insert(std::move(approver));
    } else {
      problems.push_back(std::move(problem));
    }
  }
  if (counted.size() < needed) {
    return Refused(absl::StrCat(counted.size(), " valid signature(s) by distinct approvers of ",
                                needed, " needed (", order.signatures_size(), " carried)",
                                problems.empty() ? "" : ": ", absl::StrJoin(problems, "; ")));
  }

  VerifiedOrder out;
  ChangeOrder& o = out.order;
  o.set_change_id(order.change_id());
  o.set_version(order.version());
  o.set_nonce(order.nonce());
  for (const auto& s : mine->settings()) *o.add_settings() = s;
  o.set_host_order(order.host_order());
  o.set_host_index(order.host_index());
  *o.mutable_host_proof() = order.host_proof();
  for (const auto& opt : payload.options()) o.add_options(opt);
  *o.mutable_not_after() = payload.not_after();
  o.set_rollback_of(payload.rollback_of());
  o.set_reason(order.reason());
  o.set_approval_payload(order.approval_payload());
  *o.mutable_signatures() = order.signatures();
  out.payload = std::move(payload);
  return out;
}

}  // namespace smbfleet::agent
