#include "policy/plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/time_util.h"
#include "policy/plan_cost.h"

namespace smbfleet::policy {
namespace {

using google::protobuf::Timestamp;
using smbfleet::v1::AffectedClient;
using smbfleet::v1::Dialect;
using smbfleet::v1::Event;
using smbfleet::v1::Impact;
using smbfleet::v1::PlanStep;
using smbfleet::v1::Posture;
using smbfleet::v1::Session;

bool Lt(Dialect d, Dialect limit) { return d != smbfleet::v1::DIALECT_UNSPECIFIED && d < limit; }

bool IsServerEvent(const Event& e) {
  std::string where = absl::AsciiStrToLower(e.channel().empty() ? e.provider() : e.channel());
  return absl::StrContains(where, "smbserver");
}

std::string DialectText(Dialect d) { return std::string(DialectName(d)); }

// A server as connections and client events name it: "\\\\NAS01" and "NAS01" are one server.
std::string ServerName(absl::string_view name) {
  name = absl::StripAsciiWhitespace(name);
  while (absl::ConsumePrefix(&name, "\\")) {
  }
  return std::string(name);
}

bool SessionUsesShare(const Posture& p, const Session& s, absl::string_view share, bool* known) {
  *known = s.shares_size() > 0;
  for (const auto& t : s.shares()) {
    if (absl::EqualsIgnoreCase(t.name(), share)) return true;
  }
  // Windows sessions carry no tree connects; open files name the share of a session.
  for (const auto& f : p.open_files()) {
    if (f.session_id() != s.session_id()) continue;
    *known = true;
    if (absl::EqualsIgnoreCase(f.share_name(), share)) return true;
  }
  return false;
}

// Collects the clients one step would refuse, without duplicates.
class ImpactBuilder {
 public:
  // `collected_at`: when the posture was taken (the time its sessions were last seen).
  ImpactBuilder(const PlanStep& step, const Timestamp& collected_at, Impact* impact)
      : step_(step), collected_at_(collected_at), impact_(impact) {}

  void FromSession(const Session& s, std::string reason, absl::string_view share = "") {
    AffectedClient* c = Add(smbfleet::v1::IMPACT_SOURCE_SESSION, s.client_name(),
                            s.client_address(), s.user(), s.session_id());
    if (c == nullptr) return;
    if (collected_at_.seconds() > 0) {
      Timestamp connected = collected_at_;
      connected.set_seconds(collected_at_.seconds() - s.seconds_exists());
      Seen(c, connected);
      Seen(c, collected_at_);
    }
    c->set_reason(std::move(reason));
    c->set_share(std::string(share));
    c->set_dialect(s.dialect());
    c->set_session_id(s.session_id());
    c->set_evidence(absl::StrCat("session ", s.session_id(), " from ", s.client_address(),
                                 " dialect ", DialectName(s.dialect()), s.guest() ? " guest" : "",
                                 s.anonymous() ? " anonymous" : ""));
  }

  void FromEvent(const Event& e, std::string reason) {
    const std::string key = absl::StrCat("event:", e.event_id());
    if (AffectedClient* seen = Find(smbfleet::v1::IMPACT_SOURCE_EVENT, e.client_name(),
                                    e.client_address(), e.user(), key)) {
      if (e.has_time()) Seen(seen, e.time());  // the same client refused again: widen the span
      return;
    }
    AffectedClient* c =
        Add(smbfleet::v1::IMPACT_SOURCE_EVENT, e.client_name(), e.client_address(), e.user(), key);
    if (c == nullptr) return;
    if (e.has_time()) Seen(c, e.time());
    c->set_reason(std::move(reason));
    c->set_share(e.share_name());
    std::string when = e.has_time() ? google::protobuf::util::TimeUtil::ToString(e.time()) : "";
    c->set_evidence(absl::StrCat("event ", e.event_id(), e.channel().empty() ? "" : " in ",
                                 e.channel(), when.empty() ? "" : " at ", when));
  }

  void FromPeer(const PeerConnection& pc, std::string reason) {
    const auto& conn = pc.connection;
    AffectedClient* c = Add(smbfleet::v1::IMPACT_SOURCE_PEER_CONNECTION, pc.reporter, "",
                            conn.user(), absl::StrCat("peer:", conn.share_name()));
    if (c == nullptr) return;
    c->set_reason(std::move(reason));
    c->set_share(conn.share_name());
    c->set_reporter(pc.reporter);
    c->set_dialect(conn.dialect());
    c->set_evidence(absl::StrCat(
        pc.reporter, " reports a connection to ", conn.server_name(), "\\", conn.share_name(),
        " dialect ", conn.dialect_raw().empty() ? DialectText(conn.dialect()) : conn.dialect_raw(),
        " signed=", conn.has_signed_() ? (conn.signed_() ? "true" : "false") : "unknown",
        " encrypted=", conn.has_encrypted() ? (conn.encrypted() ? "true" : "false") : "unknown"));
  }

  // Client side: a server this host's own client connects to. One entry per server and step;
  // further shares of the same server join its evidence.
  void FromOwnConnection(const smbfleet::v1::Connection& conn, std::string reason) {
    const std::string server = ServerName(conn.server_name());
    std::string evidence = absl::StrCat(
        "this host's connection to \\\\", server, "\\", conn.share_name(), " dialect ",
        conn.dialect_raw().empty() ? DialectText(conn.dialect()) : conn.dialect_raw(),
        " signed=", conn.has_signed_() ? (conn.signed_() ? "true" : "false") : "unknown",
        " encrypted=", conn.has_encrypted() ? (conn.encrypted() ? "true" : "false") : "unknown");
    if (AffectedClient* seen = Find(smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION,
                                    absl::AsciiStrToLower(server), "", "", "own")) {
      absl::StrAppend(seen->mutable_evidence(), "; ", evidence);
      return;
    }
    AffectedClient* c = Add(smbfleet::v1::IMPACT_SOURCE_OWN_CONNECTION,
                            absl::AsciiStrToLower(server), "", "", "own");
    if (c == nullptr) return;
    c->set_client_name(server);
    c->set_user(conn.user());
    if (collected_at_.seconds() > 0) {
      Seen(c, collected_at_);
    }
    c->set_reason(std::move(reason));
    c->set_share(conn.share_name());
    c->set_dialect(conn.dialect());
    c->set_evidence(std::move(evidence));
  }

  // Client side: an event this host's SMB client logged about a server (the event's
  // client_name/client_address hold the server's name and address). One entry per server, step
  // and event id; repeats widen first/last seen.
  void FromOwnEvent(const Event& e, std::string reason) {
    const std::string server = ServerName(e.client_name());
    const std::string key = absl::AsciiStrToLower(server.empty() ? e.client_address() : server);
    const std::string discriminator = absl::StrCat("own-event:", e.event_id());
    if (AffectedClient* seen =
            Find(smbfleet::v1::IMPACT_SOURCE_EVENT, key, "", "", discriminator)) {
      if (e.has_time()) Seen(seen, e.time());
      return;
    }
    AffectedClient* c = Add(smbfleet::v1::IMPACT_SOURCE_EVENT, key, "", "", discriminator);
    if (c == nullptr) return;
    c->set_client_name(server);
    c->set_client_address(e.client_address());
    c->set_user(e.user());
    if (e.has_time()) Seen(c, e.time());
    c->set_reason(std::move(reason));
    c->set_share(e.share_name());
    std::string when = e.has_time() ? google::protobuf::util::TimeUtil::ToString(e.time()) : "";
    c->set_evidence(absl::StrCat("this host's client logged event ", e.event_id(),
                                 e.channel().empty() ? "" : " in ", e.channel(), " naming ",
                                 server.empty() ? e.client_address() : server,
                                 when.empty() ? "" : " at ", when));
  }

 private:
  using Key = std::tuple<int, std::string, std::string, std::string, std::string>;

  static void Seen(AffectedClient* c, const Timestamp& at) {
    auto before = [](const Timestamp& a, const Timestamp& b) {
      return a.seconds() < b.seconds() || (a.seconds() == b.seconds() && a.nanos() < b.nanos());
    };
    if (!c->has_first_seen() || before(at, c->first_seen())) *c->mutable_first_seen() = at;
    if (!c->has_last_seen() || before(c->last_seen(), at)) *c->mutable_last_seen() = at;
  }

  // The entry already made for this client, or null.
  AffectedClient* Find(smbfleet::v1::ImpactSource source, const std::string& name,
                       const std::string& address, const std::string& user,
                       const std::string& discriminator) {
    auto it =
        seen_.find(std::make_tuple(static_cast<int>(source), name, address, user, discriminator));
    return it == seen_.end() ? nullptr : impact_->mutable_clients(it->second);
  }

  // A new entry, or null when this client is already listed.
  AffectedClient* Add(smbfleet::v1::ImpactSource source, const std::string& name,
                      const std::string& address, const std::string& user,
                      const std::string& discriminator) {
    Key key = std::make_tuple(static_cast<int>(source), name, address, user, discriminator);
    if (!seen_.emplace(std::move(key), impact_->clients_size()).second) return nullptr;
    AffectedClient* c = impact_->add_clients();
    c->set_setting(step_.share().empty() ? step_.setting()
                                         : absl::StrCat(step_.setting(), "[", step_.share(), "]"));
    c->set_source(source);
    c->set_client_name(name);
    c->set_client_address(address);
    c->set_user(user);
    return c;
  }

  const PlanStep& step_;
  Timestamp collected_at_;
  Impact* impact_;
  std::map<Key, int> seen_;  // each client's index in impact_->clients()
};

bool PlanSets(const std::vector<PlanStep>& steps, absl::string_view setting,
              absl::string_view value, absl::string_view share = "") {
  for (const PlanStep& s : steps) {
    if (s.setting() == setting && s.value() == value && (share.empty() || s.share() == share)) {
      return true;
    }
  }
  return false;
}

// After the plan, does an encrypted share refuse clients that cannot encrypt?
bool RejectsAfterPlan(const Posture& p, const std::vector<PlanStep>& steps) {
  if (p.host().platform() == smbfleet::v1::PLATFORM_SAMBA) return true;  // smb encrypt = required
  if (PlanSets(steps, "server.rejectUnencryptedAccess", "true")) return true;
  // Windows default is true; unknown is treated as true so that impact is not understated.
  return !p.server().has_reject_unencrypted_access() || p.server().reject_unencrypted_access();
}

bool EncryptedAfterPlan(const Posture& p, const std::vector<PlanStep>& steps,
                        const smbfleet::v1::Share& share) {
  if (p.server().encrypt_data() || share.encrypt_data()) return true;
  return PlanSets(steps, "server.encryptData", "true") ||
         PlanSets(steps, "share.encryptData", "true", share.name());
}

void RefusedWithoutEncryption(const Posture& p, absl::string_view share,
                              absl::Span<const PeerConnection> peers, ImpactBuilder* b) {
  for (const Session& s : p.sessions()) {
    if (!Lt(s.dialect(), smbfleet::v1::DIALECT_SMB_3_0)) continue;
    bool known = false;
    if (share.empty()) {
      b->FromSession(s, absl::StrCat("dialect ", DialectName(s.dialect()),
                                     " cannot encrypt (needs SMB 3.0+)"));
    } else if (SessionUsesShare(p, s, share, &known)) {
      b->FromSession(s,
                     absl::StrCat("dialect ", DialectName(s.dialect()),
                                  " cannot encrypt (needs SMB 3.0+): refused on ", share),
                     share);
    } else if (!known) {
      b->FromSession(s,
                     absl::StrCat("dialect ", DialectName(s.dialect()),
                                  " cannot encrypt; the posture does not say which shares it "
                                  "uses, so it may be refused on ",
                                  share),
                     share);
    }
  }
  for (const Event& e : p.events()) {
    if (e.kind() != "client_no_encryption") continue;
    if (!share.empty() && !e.share_name().empty() &&
        !absl::EqualsIgnoreCase(e.share_name(), share)) {
      continue;
    }
    b->FromEvent(e, "audit event: client does not support encryption");
  }
  for (const PeerConnection& pc : peers) {
    const auto& c = pc.connection;
    if (!share.empty() && !absl::EqualsIgnoreCase(c.share_name(), share)) continue;
    if (c.has_encrypted() && c.encrypted()) continue;
    if (Lt(c.dialect(), smbfleet::v1::DIALECT_SMB_3_0)) {
      b->FromPeer(pc, absl::StrCat("unencrypted connection with dialect ", DialectName(c.dialect()),
                                   ": cannot encrypt, refused"));
    } else if (c.dialect() == smbfleet::v1::DIALECT_UNSPECIFIED) {
      b->FromPeer(pc, "unencrypted connection of unknown dialect: refused if below SMB 3.0");
    }
  }
}

bool Encrypted(const smbfleet::v1::Connection& c) { return c.has_encrypted() && c.encrypted(); }

// A client setting: the servers this host's own client talks to that would refuse it (or that
// it would refuse), from Get-SmbConnection rows and the client's own audit events.
void RefusedByServers(const PlanStep& step, const Posture& p, ImpactBuilder* b) {
  const std::string& setting = step.setting();
  const bool on = step.value() == "true";
  // A guest logon (31022, allowed by the client) has no session key: no signing, no encryption.
  auto guest_events = [&](absl::string_view why) {
    for (const Event& e : p.events()) {
      if (e.kind() == "guest_logon" && !IsServerEvent(e)) {
        b->FromOwnEvent(e, absl::StrCat("audit event: this client logged on as guest; ", why));
      }
    }
  };
  // The client's audits of servers (31998/31999). Which id is signing and which encryption is not
  // documented: an event whose message names neither counts for both.
  auto server_audits = [&](absl::string_view kind, absl::string_view what) {
    for (const Event& e : p.events()) {
      if (e.kind() == kind) {
        b->FromOwnEvent(e, absl::StrCat("audit event: the server does not support ", what));
      } else if (e.kind() == "server_capability_audit") {
        b->FromOwnEvent(e,
                        "audit event: the server does not support signing or encryption (the "
                        "event does not say which)");
      }
    }
  };
  if (setting == "client.requireSigning" && on) {
    for (const auto& c : p.connections()) {
      if (c.has_signed_() && !c.signed_() && !Encrypted(c)) {
        b->FromOwnConnection(c,
                             "unsigned connection to this server: refused if the server "
                             "cannot sign (guest access, SMB1, old NAS)");
      }
    }
    server_audits("server_no_signing", "signing");
    guest_events("a guest session cannot sign");
  } else if (setting == "client.requireEncryption" && on) {
    for (const auto& c : p.connections()) {
      if (!c.has_encrypted() || c.encrypted()) continue;
      if (Lt(c.dialect(), smbfleet::v1::DIALECT_SMB_3_0)) {
        b->FromOwnConnection(
            c, absl::StrCat("unencrypted connection with dialect ", DialectName(c.dialect()),
                            ": cannot encrypt (needs SMB 3.0+), refused"));
      } else {
        b->FromOwnConnection(c,
                             "unencrypted connection to this server: refused if the server "
                             "does not offer encryption");
      }
    }
    server_audits("server_no_encryption", "encryption");
    guest_events("a guest session cannot encrypt");
  } else if (setting == "client.minDialect") {
    Dialect min;
    if (!ParseDialectName(step.value(), &min)) return;
    for (const auto& c : p.connections()) {
      if (Lt(c.dialect(), min)) {
        b->FromOwnConnection(c, absl::StrCat("connection with dialect ", DialectName(c.dialect()),
                                             " below ", DialectName(min)));
      }
    }
    for (const Event& e : p.events()) {
      if (e.kind() == "smb1_server_response") {
        b->FromOwnEvent(e, absl::StrCat("audit event: the server answered with SMB1, below ",
                                        DialectName(min)));
      }
    }
  } else if (setting == "client.enableInsecureGuestLogons" && !on) {
    guest_events("it will be refused");
  }
}

void ImpactOf(const PlanStep& step, const Posture& p, const std::vector<PlanStep>& steps,
              absl::Span<const PeerConnection> peers, Impact* impact) {
  ImpactBuilder b(step, p.collected_at(), impact);
  const std::string& setting = step.setting();
  if (setting == "server.smb1Enabled" && step.value() == "false") {
    for (const Session& s : p.sessions()) {
      if (s.dialect() == smbfleet::v1::DIALECT_SMB1) b.FromSession(s, "SMB1 session");
    }
    for (const Event& e : p.events()) {
      if (e.kind() == "smb1_access") b.FromEvent(e, "audit event: client used SMB1");
    }
    for (const PeerConnection& pc : peers) {
      if (pc.connection.dialect() == smbfleet::v1::DIALECT_SMB1) {
        b.FromPeer(pc, "SMB1 connection");
      }
    }
  } else if (setting == "server.requireSigning" && step.value() == "true") {
    for (const Session& s : p.sessions()) {
      if (s.guest() || s.anonymous()) {
        b.FromSession(s, absl::StrCat(s.guest() ? "guest" : "anonymous",
                                      " session: has no session key to sign with"));
      } else if (s.dialect() == smbfleet::v1::DIALECT_SMB1 &&
                 s.signing() != smbfleet::v1::PROTECTION_FULL) {
        b.FromSession(s, "SMB1 session without signing");
      }
    }
    for (const Event& e : p.events()) {
      if (e.kind() == "client_no_signing") {
        b.FromEvent(e, "audit event: client does not support signing");
      } else if (e.kind() == "guest_logon" && IsServerEvent(e)) {
        b.FromEvent(e, "audit event: guest logon; a guest session cannot sign");
      }
    }
    for (const PeerConnection& pc : peers) {
      const auto& c = pc.connection;
      if (c.has_signed_() && !c.signed_() && !(c.has_encrypted() && c.encrypted())) {
        b.FromPeer(pc,
                   "unsigned connection today: must sign; refused if it cannot (guest, "
                   "SMB1 or signing disabled)");
      }
    }
  } else if (setting == "share.encryptData" && step.value() == "true") {
    if (RejectsAfterPlan(p, steps)) RefusedWithoutEncryption(p, step.share(), peers, &b);
  } else if (setting == "server.encryptData" && step.value() == "true") {
    if (RejectsAfterPlan(p, steps)) RefusedWithoutEncryption(p, "", peers, &b);
  } else if (setting == "server.rejectUnencryptedAccess" && step.value() == "true") {
    if (p.server().encrypt_data() || PlanSets(steps, "server.encryptData", "true")) {
      RefusedWithoutEncryption(p, "", peers, &b);
    } else {
      for (const auto& share : p.shares()) {
        if (EncryptedAfterPlan(p, steps, share)) {
          RefusedWithoutEncryption(p, share.name(), peers, &b);
        }
      }
    }
  } else if (setting == "server.minDialect") {
    Dialect min;
    if (ParseDialectName(step.value(), &min)) {
      for (const Session& s : p.sessions()) {
        if (Lt(s.dialect(), min)) {
          b.FromSession(
              s, absl::StrCat("dialect ", DialectName(s.dialect()), " below ", DialectName(min)));
        }
      }
      for (const PeerConnection& pc : peers) {
        if (Lt(pc.connection.dialect(), min)) {
          b.FromPeer(pc,
                     absl::StrCat("connection with dialect ", DialectName(pc.connection.dialect()),
                                  " below ", DialectName(min)));
        }
      }
    }
  } else if (absl::StartsWith(setting, "client.")) {
    RefusedByServers(step, p, &b);
  }
}

bool SambaShareNeedsRequired(const Posture& p, const SettingInfo& info, const std::string& share,
                             const std::string& value) {
  if (p.host().platform() != smbfleet::v1::PLATFORM_SAMBA ||
      info.key != SettingKey::kShareEncryptData || value != "true") {
    return false;
  }
  for (const auto& s : p.shares()) {
    if (s.name() != share) continue;
    Observed rejects = ReadShareField(Field::kShareRejectsUnencrypted, p, s);
    return !(rejects.known && rejects.value == 1);
  }
  return false;
}

// The posture as the cost model should see it: a share's data is priced by its classification
// (a backup share compresses like the vm-disk corpus), which the collector stores with the
// posture but a posture read from a file lacks. Copies only when a compression step needs it.
const Posture& WithClassifications(const Posture& p, const smbfleet::v1::HostEvaluation& evaluation,
                                   const std::vector<PlanStep>& steps, Posture* copy) {
  bool needed = false;
  for (const PlanStep& step : steps) {
    if (step.setting() != "share.compressData") continue;
    for (const auto& s : p.shares()) {
      needed = needed || (s.name() == step.share() && s.classification().empty());
    }
  }
  if (!needed) return p;
  *copy = p;
  for (auto& s : *copy->mutable_shares()) {
    if (!s.classification().empty()) continue;
    for (const auto& c : evaluation.classifications()) {
      if (c.share() == s.name()) s.set_classification(c.classification());
    }
  }
  return *copy;
}

}  // namespace

std::vector<PeerConnection> PeerConnectionsTowards(const smbfleet::v1::HostInfo& host,
                                                   absl::Span<const PeerConnection> all) {
  std::string short_fqdn = host.fqdn().substr(0, host.fqdn().find('.'));
  std::vector<PeerConnection> out;
  for (const PeerConnection& pc : all) {
    absl::string_view name = pc.connection.server_name();
    if (name.empty()) continue;
    if ((!host.hostname().empty() && absl::EqualsIgnoreCase(name, host.hostname())) ||
        (!host.fqdn().empty() && absl::EqualsIgnoreCase(name, host.fqdn())) ||
        (!short_fqdn.empty() && absl::EqualsIgnoreCase(name, short_fqdn))) {
      out.push_back(pc);
    }
  }
  return out;
}

std::string CurrentSettingValue(const SettingInfo& setting, const Posture& p,
                                absl::string_view share) {
  const FieldInfo* f = LookupField(setting.name);
  if (f == nullptr) return "";
  Observed v;
  if (f->scope == FieldScope::kShare) {
    for (const auto& s : p.shares()) {
      if (s.name() == share) v = ReadShareField(f->field, p, s);
    }
  } else {
    v = ReadHostField(f->field, p);
  }
  return v.known ? FormatValue(f->type, v.value) : "";
}

smbfleet::v1::Impact PlanImpact(const Posture& p, const std::vector<PlanStep>& steps,
                                absl::Span<const PeerConnection> peers) {
  Impact result;
  Impact* impact = &result;
  for (const PlanStep& step : steps) ImpactOf(step, p, steps, peers, impact);
  std::set<std::pair<std::string, std::string>> clients;
  uint32_t sessions = 0;
  std::set<std::string> session_ids;
  for (const auto& c : impact->clients()) {
    clients.insert({c.client_name(), c.client_address()});
    if (c.source() == smbfleet::v1::IMPACT_SOURCE_SESSION &&
        session_ids.insert(c.session_id()).second) {
      ++sessions;
    }
  }
  impact->set_refused_sessions(sessions);
  impact->set_refused_clients(static_cast<uint32_t>(clients.size()));
  *impact->mutable_cost() = PredictPlanCost(p, steps);
  return result;
}

smbfleet::v1::RemediationPlan PlanRemediation(const Policy& policy, const Posture& p,
                                              const smbfleet::v1::HostEvaluation& evaluation,
                                              absl::Span<const PeerConnection> peers,
                                              absl::Time now) {
  smbfleet::v1::RemediationPlan plan;
  plan.set_hostname(evaluation.hostname());
  plan.set_policy_name(policy.name);
  plan.set_policy_version(policy.version);
  int64_t secs = absl::ToUnixSeconds(now);
  plan.mutable_planned_at()->set_seconds(secs);

  std::vector<PlanStep> steps;
  std::set<std::string> planned_rules, manual_rules;
  for (const auto& res : evaluation.results()) {
    if (res.status() != smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT) continue;
    const Rule* rule = nullptr;
    for (const Rule& r : policy.rules) {
      if (r.id == res.rule_id()) rule = &r;
    }
    if (rule == nullptr) continue;  // evaluated with another policy version
    if (rule->remediation.empty()) {
      manual_rules.insert(rule->id);
      continue;
    }
    bool contributed = false;
    for (const RemediationStep& rs : rule->remediation) {
      if (!rs.platforms.empty() && std::find(rs.platforms.begin(), rs.platforms.end(),
                                             p.host().platform()) == rs.platforms.end()) {
        continue;
      }
      const SettingInfo& info = InfoOf(rs.setting);
      std::string share = info.scope == SettingScope::kShare ? res.share() : "";
      auto existing = std::find_if(steps.begin(), steps.end(), [&](const PlanStep& s) {
        return s.setting() == info.name && s.share() == share;
      });
      if (existing != steps.end()) {
        bool listed = false;
        for (const auto& id : existing->rule_ids()) listed = listed || id == rule->id;
        if (!listed) existing->add_rule_ids(rule->id);
        contributed = true;
        continue;
      }
      std::string current = CurrentSettingValue(info, p, share);
      if (info.scope == SettingScope::kShare) {
        // The share's own flag, not the computed "encrypted" view.
        for (const auto& s : p.shares()) {
          if (s.name() != share) continue;
          if (info.key == SettingKey::kShareEncryptData) {
            current = s.has_encrypt_data() ? (s.encrypt_data() ? "true" : "false") : "";
          } else if (info.key == SettingKey::kShareCompressData) {
            current = s.has_compress_data() ? (s.compress_data() ? "true" : "false") : "";
          }
        }
      }
      // Already there. Except on Samba, where share.encryptData=true is written as
      // "smb encrypt = required": a share at "desired" reads encryptData=true but still
      // admits unencrypted clients, and the same step is what makes it reject them.
      if (current == rs.value && !SambaShareNeedsRequired(p, info, share, rs.value)) continue;
      if (rs.phase == smbfleet::v1::PLAN_PHASE_AUDIT && current.empty()) {
        continue;  // the audit switch does not exist on this build
      }
      PlanStep step;
      step.set_setting(std::string(info.name));
      step.set_share(share);
      step.set_expected_current(current);
      step.set_value(rs.value);
      step.set_rollback_value(current);
      step.set_phase(rs.phase);
      step.add_rule_ids(rule->id);
      step.set_reason(current.empty() ? absl::StrCat(rule->title,
                                                     " (current value unknown: rollback uses "
                                                     "the value the agent journals)")
                                      : rule->title);
      steps.push_back(std::move(step));
      contributed = true;
    }
    if (contributed) {
      planned_rules.insert(rule->id);
    } else {
      manual_rules.insert(rule->id);
    }
  }
  // Audit first, then protect (e.g. encrypt a share), then require (reject unencrypted,
  // require signing), then switch legacy off. Stable: rule order within a phase.
  std::stable_sort(steps.begin(), steps.end(),
                   [](const PlanStep& a, const PlanStep& b) { return a.phase() < b.phase(); });
  for (size_t i = 0; i < steps.size(); ++i) steps[i].set_order(static_cast<uint32_t>(i + 1));
  Posture classified;
  *plan.mutable_impact() =
      PlanImpact(WithClassifications(p, evaluation, steps, &classified), steps, peers);
  for (auto& s : steps) *plan.add_steps() = std::move(s);
  for (const auto& id : planned_rules) plan.add_rule_ids(id);
  for (const auto& id : manual_rules) {
    if (!planned_rules.count(id)) plan.add_not_remediable(id);
  }
  return plan;
}

}  // namespace smbfleet::policy
