#include "cli/commands_trust.h"

#include <sys/stat.h>

#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/admin_call.h"
#include "cli/exit_code.h"
#include "cli/render.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "common/yaml_config.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;

constexpr size_t kMaxFileBytes = 4 << 20;

int Failed(const absl::Status& s, std::ostream& err) {
  err << "smbfleetctl: " << Clean(s.message()) << "\n";
  return absl::IsInvalidArgument(s) ? kExitUsage : kExitFailed;
}

absl::StatusOr<v1::SignedApproverSet> ReadSetFile(const std::string& file) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(file, kMaxFileBytes));
  v1::SignedApproverSet set;
  v1::ApproverSet inner;
  if (!set.ParseFromString(bytes) || !inner.ParseFromString(set.approver_set())) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": not an approver set written by `smbfleetctl trust sign-approvers`"));
  }
  return set;
}

int Print(const v1::SignedApproverSet& set, bool json, std::ostream& out, std::ostream& err) {
  if (!json) {
    RenderApproverSet(set, out);
    return kExitOk;
  }
  v1::ApproverSet inner;
  inner.ParseFromString(set.approver_set());
  absl::StatusOr<std::string> text = ToJson(inner);
  if (!text.ok()) return Failed(text.status(), err);
  out << *text;
  return kExitOk;
}

}  // namespace

absl::StatusOr<std::string> InitRoot(const std::string& key_file) {
  if (FileExists(key_file)) {
    return absl::AlreadyExistsError(absl::StrCat(
        key_file, " exists; a root key is made once (move the old one away to replace it)"));
  }
  ASSIGN_OR_RETURN(Ed25519Key key, GenerateEd25519Key());
  RETURN_IF_ERROR(WriteFileAtomic(key_file, key.private_pem, 0600));
  if (::chmod(key_file.c_str(), 0600) != 0) {  // whatever the umask made of it
    return absl::InternalError(absl::StrCat(key_file, ": cannot make it 0600"));
  }
  return PublicKeyText(key.public_raw);
}

absl::StatusOr<std::vector<v1::ApproverKey>> ReadApproversFile(const std::string& file) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(file, kMaxFileBytes));
  ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(file, text));
  ConfigProblems problems(file);
  std::vector<v1::ApproverKey> keys;
  if (!root.IsMap()) {
    problems.AddNoLine("", "expected a mapping of approver name to public key (ed25519:...)");
    return problems.ToStatus();
  }
  for (const auto& entry : root) {
    const std::string name = entry.first.as<std::string>("");
    if (!entry.second.IsScalar()) {
      problems.Add(entry.second, name, "expected a public key (ed25519:...)");
      continue;
    }
    absl::StatusOr<std::string> raw = ParsePublicKeyText(entry.second.as<std::string>(""));
    if (name.empty() || !raw.ok()) {
      problems.Add(entry.second, name,
                   name.empty() ? "an approver needs a name" : raw.status().message());
      continue;
    }
    v1::ApproverKey k;
    k.set_name(name);
    k.set_key_id(KeyId(*raw));
    k.set_public_key(*raw);
    keys.push_back(std::move(k));
  }
  RETURN_IF_ERROR(problems.ToStatus());
  return keys;
}

absl::StatusOr<v1::SignedApproverSet> SignApproverSet(const std::string& root_private_pem,
                                                      uint64_t serial,
                                                      const std::vector<v1::ApproverKey>& approvers,
                                                      absl::Time now) {
  if (serial == 0) return absl::InvalidArgumentError("--serial must be at least 1");
  ASSIGN_OR_RETURN(Ed25519Key root, Ed25519KeyFromPem(root_private_pem));
  v1::ApproverSet set;
  set.set_serial(serial);
  set.mutable_issued_at()->set_seconds(absl::ToUnixSeconds(now));
  for (const v1::ApproverKey& k : approvers) {
    if (k.has_revoked_at()) continue;
    v1::ApproverKey* kept = set.add_approvers();
    kept->set_name(k.name());
    kept->set_key_id(KeyId(k.public_key()));
    kept->set_public_key(k.public_key());
  }
  v1::SignedApproverSet out;
  out.set_approver_set(set.SerializeAsString());
  out.set_root_key_id(KeyId(root.public_raw));
  ASSIGN_OR_RETURN(std::string signature, SignEd25519(root_private_pem, out.approver_set()));
  out.set_signature(std::move(signature));
  return out;
}

void RenderApproverSet(const v1::SignedApproverSet& signed_set, std::ostream& out) {
  v1::ApproverSet set;
  set.ParseFromString(signed_set.approver_set());
  out << "approver set serial " << set.serial() << ", issued " << TimeText(set.issued_at())
      << ", signed by root key " << Clean(signed_set.root_key_id()) << "\n";
  if (set.approvers().empty()) out << "  (no approvers: agents trust only their pinned keys)\n";
  for (const v1::ApproverKey& k : set.approvers()) {
    out << "  " << Clean(k.name()) << "  " << KeyId(k.public_key()) << "  "
        << PublicKeyText(k.public_key()) << "\n";
  }
}

int ExecuteTrust(const Invocation& inv, const StubFactory& connect, std::ostream& out,
                 std::ostream& err) {
  const GlobalFlags& g = inv.global;
  const TrustFlags& t = inv.trust;
  const std::string& root_file = t.root_file;
  const std::string& root_key = t.root_key;
  const std::string& approvers_file = t.approvers_file;
  const std::string& out_file = t.out_file;
  const std::string& set_file = t.set_file;
  const std::string& show_file = t.show_file;
  const uint64_t serial = t.serial;
  const bool from_collector = t.from_collector;
  const bool json = g.format == "json";

  std::unique_ptr<AdminStub> s;
  // Connects on first use: init-root and signing from a file need no collector.
  auto connected = [&]() -> bool {
    if (s != nullptr) return true;
    absl::StatusOr<std::unique_ptr<AdminStub>> made = connect(g);
    if (!made.ok()) {
      err << "smbfleetctl: " << Clean(made.status().message()) << "\n";
      return false;
    }
    s = *std::move(made);
    return true;
  };

  if (inv.command == "trust init-root") {
    absl::StatusOr<std::string> pub = InitRoot(root_file);
    if (!pub.ok()) return Failed(pub.status(), err);
    out << "root key written to " << Clean(root_file) << " (0600); keep it offline.\n"
        << "Pin it on every agent (agent config):\n  trust:\n    root: \"" << *pub << "\"\n";
    return kExitOk;
  }
  if (inv.command == "trust sign-approvers") {
    if (!from_collector && approvers_file.empty()) {
      err << "smbfleetctl: trust sign-approvers: --from-collector or --approvers FILE is needed\n";
      return kExitUsage;
    }
    std::vector<v1::ApproverKey> keys;
    if (from_collector) {
      if (!connected()) return kExitUsage;
      v1::ListApproverKeysResponse listed;
      grpc::Status called = WithDeadline([&](grpc::ClientContext* c) {
        return s->ListApproverKeys(c, v1::ListApproverKeysRequest(), &listed);
      });
      if (!called.ok()) return FailedCall(called, "listing approver keys", err);
      keys.assign(listed.keys().begin(), listed.keys().end());
    } else {
      absl::StatusOr<std::vector<v1::ApproverKey>> read = ReadApproversFile(approvers_file);
      if (!read.ok()) return Failed(read.status(), err);
      keys = *std::move(read);
    }
    absl::StatusOr<std::string> pem = ReadFile(root_key, kMaxFileBytes);
    if (!pem.ok()) return Failed(pem.status(), err);
    absl::StatusOr<v1::SignedApproverSet> set = SignApproverSet(*pem, serial, keys, absl::Now());
    if (!set.ok()) return Failed(set.status(), err);
    if (absl::Status w = WriteFileAtomic(out_file, set->SerializeAsString(), 0644); !w.ok()) {
      return Failed(w, err);
    }
    Print(*set, json, out, err);
    if (!json) out << "written to " << Clean(out_file) << "; publish it with `trust publish`\n";
    return kExitOk;
  }
  if (inv.command == "trust publish") {
    absl::StatusOr<v1::SignedApproverSet> set = ReadSetFile(set_file);
    if (!set.ok()) return Failed(set.status(), err);
    if (!connected()) return kExitUsage;
    v1::PublishApproverSetRequest req;
    *req.mutable_set() = *set;
    v1::PublishApproverSetResponse resp;
    grpc::Status called =
        WithDeadline([&](grpc::ClientContext* c) { return s->PublishApproverSet(c, req, &resp); });
    if (!called.ok()) return FailedCall(called, "publishing the approver set", err);
    if (json) {
      absl::StatusOr<std::string> text = ToJson(resp);
      if (!text.ok()) return Failed(text.status(), err);
      out << *text;
      return kExitOk;
    }
    out << "approver set serial " << resp.serial() << " published; sent to " << resp.agents_sent()
        << " connected agent(s) on that collector (the others get it when they connect)\n";
    return kExitOk;
  }
  // show
  if (!show_file.empty()) {
    absl::StatusOr<v1::SignedApproverSet> set = ReadSetFile(show_file);
    if (!set.ok()) return Failed(set.status(), err);
    return Print(*set, json, out, err);
  }
  if (!connected()) return kExitUsage;
  v1::GetApproverSetResponse resp;
  grpc::Status called = WithDeadline([&](grpc::ClientContext* c) {
    return s->GetApproverSet(c, v1::GetApproverSetRequest(), &resp);
  });
  if (!called.ok()) return FailedCall(called, "reading the approver set", err);
  return Print(resp.set(), json, out, err);
}

}  // namespace smbfleet::cli
