#include "agent/core/testing/test_approvals.h"

#include <cstdlib>
#include <optional>
#include <utility>

#include "spdlog/spdlog.h"

namespace smbfleet::agent::testing {
namespace {

Ed25519Key MustGenerate() {
  absl::StatusOr<Ed25519Key> k = GenerateEd25519Key();
  if (!k.ok()) {
    spdlog::critical("test keys: {}", std::string(k.status().message()));
    std::abort();
  }
  return *k;
}

}  // namespace

TestApprovals::TestApprovals() : root_(MustGenerate()) {
  for (const char* name : {"alice", "bob", "carol", "mallory"}) keys_[name] = MustGenerate();
}

TrustConfig TestApprovals::Trust(const std::vector<std::string>& pinned,
                                 uint32_t min_approvals) const {
  TrustConfig t;
  for (const std::string& name : pinned) t.approvers[name] = key(name).public_raw;
  t.root_public_key = root_.public_raw;
  t.min_approvals = min_approvals;
  return t;
}

smbfleet::v1::ApprovalPayload TestApprovals::PayloadOf(const smbfleet::v1::ChangeOrder& order,
                                                       const std::vector<std::string>& hosts,
                                                       absl::Time default_not_after) {
  smbfleet::v1::ApprovalPayload p;
  p.set_change_id(order.change_id());
  p.set_version(order.version());
  p.set_nonce("approval-" + order.change_id());
  if (order.has_not_after()) {
    *p.mutable_not_after() = order.not_after();
  } else {
    p.mutable_not_after()->set_seconds(absl::ToUnixSeconds(default_not_after));
  }
  p.set_proposed_by("paula");
  p.set_approvals_required(1);
  p.set_rollback_of(order.rollback_of());
  for (const std::string& h : hosts) {
    smbfleet::v1::HostOrder* host = p.add_hosts();
    host->set_host(h);
    *host->mutable_settings() = order.settings();
  }
  *p.mutable_options() = order.options();
  return p;
}

smbfleet::v1::ChangeOrder TestApprovals::Sign(smbfleet::v1::ChangeOrder order,
                                              const smbfleet::v1::ApprovalPayload& payload,
                                              const std::vector<std::string>& approvers) const {
  absl::StatusOr<std::string> bytes = CanonicalApprovalPayload(payload);
  if (!bytes.ok()) {
    spdlog::critical("test payload: {}", std::string(bytes.status().message()));
    std::abort();
  }
  order.set_approval_payload(*bytes);
  for (const std::string& a : approvers) *order.add_signatures() = SignatureBy(a, *bytes);
  return order;
}

smbfleet::v1::ChangeOrder TestApprovals::SignV2(smbfleet::v1::ChangeOrder order,
                                                const smbfleet::v1::ApprovalPayload& payload,
                                                const std::vector<std::string>& approvers,
                                                const std::string& host) const {
  absl::StatusOr<ApprovalHostTree> tree =
      ApprovalHostTree::Build({payload.hosts().begin(), payload.hosts().end()});
  if (!tree.ok()) {
    spdlog::critical("test payload: {}", std::string(tree.status().message()));
    std::abort();
  }
  smbfleet::v1::ApprovalPayload head = payload;
  head.clear_hosts();
  head.set_format(std::string(kApprovalFormatV2));
  head.set_hosts_root(tree->root());
  head.set_host_count(static_cast<uint32_t>(tree->size()));
  order = Sign(std::move(order), head, approvers);
  if (std::optional<size_t> index = tree->IndexOf(host); index.has_value()) {
    order.set_host_order(tree->CanonicalAt(*index));
    order.set_host_index(static_cast<uint32_t>(*index));
    for (std::string& hash : tree->ProofAt(*index)) order.add_host_proof(std::move(hash));
  }
  return order;
}

smbfleet::v1::OrderSignature TestApprovals::SignatureBy(const std::string& approver,
                                                        const std::string& bytes) const {
  smbfleet::v1::OrderSignature sig;
  sig.set_approver(approver);
  sig.set_key_id(KeyId(key(approver).public_raw));
  sig.set_signature(SignEd25519(key(approver).private_pem, bytes).value());
  return sig;
}

smbfleet::v1::SignedApproverSet TestApprovals::Set(uint64_t serial,
                                                   const std::vector<std::string>& approvers,
                                                   const std::string& signer) const {
  smbfleet::v1::ApproverSet set;
  set.set_serial(serial);
  for (const std::string& a : approvers) {
    smbfleet::v1::ApproverKey* k = set.add_approvers();
    k->set_name(a);
    k->set_key_id(KeyId(key(a).public_raw));
    k->set_public_key(key(a).public_raw);
  }
  const Ed25519Key& by = signer.empty() ? root_ : key(signer);
  smbfleet::v1::SignedApproverSet out;
  out.set_approver_set(set.SerializeAsString());
  out.set_root_key_id(KeyId(by.public_raw));
  out.set_signature(SignEd25519(by.private_pem, out.approver_set()).value());
  return out;
}

}  // namespace smbfleet::agent::testing
