#include "cli/commands_approvals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/admin_call.h"
#include "cli/change_render.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "common/json.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;

absl::StatusOr<Ed25519Key> LoadKey(const std::string& path) {
  auto pem = ReadFile(path, 64 << 10);
  if (!pem.ok()) {
    return absl::NotFoundError(
        absl::StrCat("approver key ", path, ": ", pem.status().message(),
                     " (make one with `smbfleetctl keys init`, or name it with --key)"));
  }
  auto key = Ed25519KeyFromPem(*pem);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("approver key ", path, ": not an Ed25519 private key in PEM"));
  }
  return key;
}

// Writes the private key 0600, refusing to replace a file that is there (someone's only key).
absl::Status WriteNewKeyFile(const std::string& path, const std::string& pem) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (absl::Status s = MakeDirs(path.substr(0, slash), 0700); !s.ok()) return s;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(
          absl::StrCat(path, " exists; it is not replaced (keys show prints its public key)"));
    }
    return absl::UnavailableError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < pem.size()) {
    ssize_t n = ::write(fd, pem.data() + done, pem.size() - done);
    if (n <= 0) {
      ::close(fd);
      ::unlink(path.c_str());
      return absl::UnavailableError(absl::StrCat(path, ": write failed"));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  }
  return absl::OkStatus();
}

void PrintPublic(const Ed25519Key& key, std::ostream& out) {
  out << "public key: " << PublicKeyText(key.public_raw) << "\n"
      << "key id:     " << KeyId(key.public_raw) << "\n";
}

// --format=json: the public half as an ApproverKey (keyId, publicKey base64).
int PrintPublicJson(const Ed25519Key& key, std::ostream& out, std::ostream& err) {
  v1::ApproverKey k;
  k.set_key_id(KeyId(key.public_raw));
  k.set_public_key(key.public_raw);
  return PrintJson(k, out, err);
}

// What a signature covers, from the payload itself (not from the change the collector shows
// beside it): the order every host will verify.
void RenderPayload(const v1::ApprovalPayload& p, const std::vector<v1::HostOrder>& hosts,
                   std::ostream& out) {
  out << "signing change " << Clean(p.change_id()) << " version " << p.version();
  if (!p.rollback_of().empty()) out << " (rollback of " << Clean(p.rollback_of()) << ")";
  out << "\n  proposed by " << Clean(p.proposed_by()) << ", " << p.approvals_required()
      << " approval(s) required, not after " << TimeText(p.not_after()) << "\n";
  for (const auto& h : hosts) {
    out << "  " << Clean(h.host()) << "\n";
    for (const auto& s : h.settings()) {
      out << "    " << Clean(s.setting());
      if (!s.share().empty()) out << " [" << Clean(s.share()) << "]";
      out << ": " << Clean(s.expected_current().empty() ? "(unset)" : s.expected_current())
          << " -> " << Clean(s.value()) << "\n";
    }
  }
}

// Fetches change `id`, shows what its payload covers (text), signs it with the key at
// `key_path` and sends the approval. `base` carries the comment and rollout flags.
int SignAndApprove(v1::ApproveChangeRequest request, const std::string& key_path, bool json,
                   AdminStub& stub, std::ostream& out, std::ostream& err) {
  auto key = LoadKey(key_path);
  if (!key.ok()) {
    err << "smbfleetctl: " << Clean(key.status().message()) << "\n";
    return kExitUsage;
  }
  v1::GetChangeRequest get;
  get.set_id(request.id());
  v1::GetChangeResponse shown;
  if (auto s = Call(&AdminStub::GetChange, stub, get, &shown); !s.ok()) {
    return FailedCall(s, absl::StrCat("reading change ", request.id()), err);
  }
  if (shown.approval_payload().empty()) {
    err << "smbfleetctl: change " << Clean(request.id()) << " cannot be approved now (it is "
        << ChangeStateText(shown.change().state()) << ")\n";
    return kExitRefused;
  }
  auto payload = ParseApprovalPayload(shown.approval_payload());
  if (!payload.ok()) {
    err << "smbfleetctl: the collector's approval payload of change " << Clean(request.id())
        << " is not valid: " << Clean(payload.status().message()) << "; not signed\n";
    return kExitFailed;
  }
  if (payload->change_id() != request.id()) {
    err << "smbfleetctl: the collector sent the payload of another change ("
        << Clean(payload->change_id()) << "); not signed\n";
    return kExitFailed;
  }
  // The hosts a signature covers: listed in a v1 payload; for v2, the ones the collector
  // shows beside it, which must hash to the payload's tree head.
  std::vector<v1::HostOrder> hosts(payload->hosts().begin(), payload->hosts().end());
  if (payload->format() == kApprovalFormatV2) {
    auto tree =
        ApprovalHostTree::Build({shown.approval_hosts().begin(), shown.approval_hosts().end()});
    if (!tree.ok() || tree->root() != payload->hosts_root() ||
        tree->size() != payload->host_count()) {
      err << "smbfleetctl: the hosts the collector showed for change " << Clean(request.id())
          << " (" << shown.approval_hosts_size() << ") do not hash to the tree head of its "
          << "approval payload (" << payload->host_count() << " hosts); not signed\n";
      return kExitFailed;
    }
    hosts = tree->hosts();
  }
  if (!json) RenderPayload(*payload, hosts, out);
  auto signature = SignEd25519(key->private_pem, shown.approval_payload());
  if (!signature.ok()) {
    err << "smbfleetctl: signing failed: " << Clean(signature.status().message()) << "\n";
    return kExitFailed;
  }
  request.mutable_signature()->set_key_id(KeyId(key->public_raw));
  request.mutable_signature()->set_signature(*signature);
  v1::ApproveChangeResponse resp;
  if (auto s = Call(&AdminStub::ApproveChange, stub, request, &resp); !s.ok()) {
    return FailedCall(s, absl::StrCat("approving change ", request.id()), err);
  }
  if (json) return PrintJson(resp, out, err);
  RenderApproved(resp, out);
  return kExitOk;
}

int Rollback(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  const auto& req = RequestOf<v1::ChangeActionRequest>(inv);
  const bool json = inv.global.format == "json";
  v1::ChangeActionResponse resp;
  if (auto s = Call(&AdminStub::RollbackChange, stub, req, &resp); !s.ok()) {
    return FailedCall(s, absl::StrCat("rollback of change ", req.id()), err);
  }
  if (json) {
    if (int rc = PrintJson(resp, out, err); rc != kExitOk) return rc;
  } else {
    RenderChangeAction("rolled back", resp.change(),
                       resp.has_rollback() ? &resp.rollback() : nullptr, out);
  }
  if (!resp.has_rollback()) return kExitOk;  // no host had applied: nothing to send
  // The caller asked for it and is an approver: sign the rollback change at once, so that one
  // approver's rollback is one command.
  v1::ApproveChangeRequest approve;
  approve.set_id(resp.rollback().id());
  approve.set_comment(req.reason());
  std::ostringstream signed_out;
  int rc = SignAndApprove(approve,
                          inv.approver_key.empty() ? DefaultApproverKeyPath() : inv.approver_key,
                          json, stub, json ? signed_out : out, err);
  if (rc != kExitOk) {
    err << "smbfleetctl: rollback change " << Clean(resp.rollback().id())
        << " is proposed and waits for an approver's signature: smbfleetctl changes approve "
        << Clean(resp.rollback().id()) << "\n";
  }
  return rc;
}

void RenderKeys(const v1::ListApproverKeysResponse& r, std::ostream& out) {
  if (r.keys().empty()) {
    out << "no approver keys registered\n";
    return;
  }
  for (const auto& k : r.keys()) {
    out << Clean(k.name()) << "  " << Clean(k.key_id()) << "  " << PublicKeyText(k.public_key())
        << "  added " << TimeText(k.added_at()) << " by " << Clean(k.added_by());
    if (k.has_revoked_at()) {
      out << "  REVOKED " << TimeText(k.revoked_at()) << " by " << Clean(k.revoked_by());
    }
    out << "\n";
  }
}

}  // namespace

std::string DefaultApproverKeyPath() {
  if (const char* env = std::getenv("SMBFLEET_APPROVER_KEY"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* home = std::getenv("HOME");
  return absl::StrCat(home != nullptr ? home : ".", "/.config/smbfleet/approver.key");
}

int ExecuteKeys(const Invocation& inv, std::ostream& out, std::ostream& err) {
  if (inv.key_file_given && inv.key_file.empty()) {
    err << "smbfleetctl: --key: a file name is required\n";
    return kExitUsage;
  }
  const std::string path = inv.key_file.empty() ? DefaultApproverKeyPath() : inv.key_file;
  const bool json = inv.global.format == "json";
  if (inv.command == "keys init") {
    auto key = GenerateEd25519Key();
    if (!key.ok()) {
      err << "smbfleetctl: " << key.status().message() << "\n";
      return kExitFailed;
    }
    if (absl::Status s = WriteNewKeyFile(path, key->private_pem); !s.ok()) {
      err << "smbfleetctl: keys init: " << Clean(s.message()) << "\n";
      return absl::IsAlreadyExists(s) ? kExitRefused : kExitFailed;
    }
    if (json) return PrintPublicJson(*key, out, err);
    out << "approver key written to " << Clean(path) << " (keep it private)\n";
    PrintPublic(*key, out);
    return kExitOk;
  }
  // keys show
  auto key = LoadKey(path);
  if (!key.ok()) {
    err << "smbfleetctl: " << Clean(key.status().message()) << "\n";
    return absl::IsNotFound(key.status()) ? kExitNotFound : kExitFailed;
  }
  if (json) return PrintPublicJson(*key, out, err);
  PrintPublic(*key, out);
  return kExitOk;
}

bool IsApprovalCommand(const std::string& command) {
  static const std::set<std::string> kCommands = {
      "approvers add", "approvers list", "approvers revoke", "changes approve", "changes rollback"};
  return kCommands.count(command) > 0;
}

int ExecuteApprovals(const Invocation& inv, AdminStub& stub, std::ostream& out, std::ostream& err) {
  const std::string& cmd = inv.command;
  const bool json = inv.global.format == "json";
  if (cmd == "changes approve") {
    return SignAndApprove(RequestOf<v1::ApproveChangeRequest>(inv),
                          inv.approver_key.empty() ? DefaultApproverKeyPath() : inv.approver_key,
                          json, stub, out, err);
  }
  if (cmd == "changes rollback") return Rollback(inv, stub, out, err);
  if (cmd == "approvers add") {
    v1::RegisterApproverKeyResponse resp;
    if (auto s = Call(&AdminStub::RegisterApproverKey, stub,
                      RequestOf<v1::RegisterApproverKeyRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "registering an approver key", err);
    }
    if (json) return PrintJson(resp, out, err);
    out << "registered approver key " << Clean(resp.key().key_id()) << " of "
        << Clean(resp.key().name()) << "\n";
    return kExitOk;
  }
  if (cmd == "approvers list") {
    v1::ListApproverKeysResponse resp;
    if (auto s = Call(&AdminStub::ListApproverKeys, stub,
                      RequestOf<v1::ListApproverKeysRequest>(inv), &resp);
        !s.ok()) {
      return FailedCall(s, "listing approver keys", err);
    }
    if (json) return PrintJson(resp, out, err);
    RenderKeys(resp, out);
    return kExitOk;
  }
  if (cmd == "approvers revoke") {
    const auto& req = RequestOf<v1::RevokeApproverKeyRequest>(inv);
    v1::RevokeApproverKeyResponse resp;
    if (auto s = Call(&AdminStub::RevokeApproverKey, stub, req, &resp); !s.ok()) {
      return FailedCall(s, absl::StrCat("revoking approver key ", req.key_id()), err);
    }
    if (json) return PrintJson(resp, out, err);
    out << "revoked approver key " << Clean(resp.key().key_id()) << " of "
        << Clean(resp.key().name()) << "\n";
    return kExitOk;
  }
  err << "smbfleetctl: internal error: no handler for '" << cmd << "'\n";
  return kExitFailed;
}

}  // namespace smbfleet::cli
