#include "policy/evaluate.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "policy/compressibility.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::ComplianceStatus;
using smbfleet::v1::Evidence;
using smbfleet::v1::HostEvaluation;
using smbfleet::v1::Posture;
using smbfleet::v1::RuleResult;
using smbfleet::v1::Session;
using smbfleet::v1::Share;

// Per result; the summary evidence counts them all and plans list every affected client.
constexpr int kMaxSessionEvidence = 10;

enum class Applies { kYes, kNo, kUnknown };

absl::Time ToTime(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void SetTimestamp(absl::Time t, google::protobuf::Timestamp* ts) {
  int64_t s = absl::ToUnixSeconds(t);
  ts->set_seconds(s);
  ts->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(t - absl::FromUnixSeconds(s))));
}

// A HostEvaluation reused from one host to the next keeps its messages and their strings, and
// most strings (rule ids, titles, field names, share names, "true") hold the same value for
// the next host. PUT compares through the inline getter first; only a change goes through
// mutable_x() and assign(), which are calls into the libraries.
template <typename Word>
inline bool SameWord(const char* x, const char* y) {
  Word u, v;
  std::memcpy(&u, x, sizeof(Word));
  std::memcpy(&v, y, sizeof(Word));
  return u == v;
}

// Inline, a word at a time (the last word overlapping): these strings are short, and memcmp's
// call costs more than the comparison.
inline bool SameBytes(const std::string& a, absl::string_view b) {
  const size_t n = b.size();
  if (a.size() != n) return false;
  const char* x = a.data();
  const char* y = b.data();
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      if (!SameWord<uint64_t>(x + i, y + i)) return false;
    }
    return SameWord<uint64_t>(x + n - 8, y + n - 8);
  }
  if (n >= 4) return SameWord<uint32_t>(x, y) && SameWord<uint32_t>(x + n - 4, y + n - 4);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}
template <typename Mutable>
inline void PutIfChanged(const std::string& current, absl::string_view v, Mutable mut) {
  if (!SameBytes(current, v)) mut()->assign(v.data(), v.size());
}
#define PUT(msg, name, value) \
  PutIfChanged((msg)->name(), (value), [&] { return (msg)->mutable_##name(); })

// The messages of a repeated field, reused: Next() hands out the slot the previous host used
// (or a new one) and Trim() drops the slots this host did not use (protobuf keeps them, cleared,
// for a later Add()). Whoever takes a slot sets or resets every field of it.
template <typename T>
class Slots {
 public:
  explicit Slots(google::protobuf::RepeatedPtrField<T>* field) : field_(field) {}
  T* Next() {
    if (used_ < field_->size()) return field_->Mutable(used_++);
    ++used_;
    return field_->Add();
  }
  void Trim() {
    while (field_->size() > used_) field_->RemoveLast();
  }

 private:
  google::protobuf::RepeatedPtrField<T>* field_;
  int used_ = 0;
};

uint32_t Bit(ProbeGroup g) { return 1u << static_cast<uint32_t>(g); }

// Which probe groups a failed probe feeds: its typed sections, or for reports from older agents
// (no sections) the probe name as they wrote it.
uint32_t GroupsOf(const smbfleet::v1::ProbeError& e) {
  if (e.sections_size() > 0) {
    uint32_t mask = 0;
    for (int s : e.sections()) {
      switch (static_cast<smbfleet::v1::PostureSection>(s)) {
        case smbfleet::v1::POSTURE_SECTION_SERVER:
          mask |= Bit(ProbeGroup::kServer);
          break;
        case smbfleet::v1::POSTURE_SECTION_CLIENT:
          mask |= Bit(ProbeGroup::kClient);
          break;
        case smbfleet::v1::POSTURE_SECTION_SHARES:
          mask |= Bit(ProbeGroup::kShares);
          break;
        case smbfleet::v1::POSTURE_SECTION_SESSIONS:
          mask |= Bit(ProbeGroup::kSessions);
          break;
        default:
          break;
      }
    }
    return mask;
  }
  absl::string_view n = e.probe();
  if (absl::StartsWithIgnoreCase(n, "Get-SmbServerConfiguration") ||
      absl::StartsWithIgnoreCase(n, "server")) {
    return Bit(ProbeGroup::kServer);
  }
  if (absl::StartsWithIgnoreCase(n, "Get-SmbClientConfiguration") ||
      absl::StartsWithIgnoreCase(n, "client")) {
    return Bit(ProbeGroup::kClient);
  }
  if (absl::StartsWithIgnoreCase(n, "Get-SmbShare") || absl::StartsWithIgnoreCase(n, "shares")) {
    return Bit(ProbeGroup::kShares);
  }
  if (absl::StartsWithIgnoreCase(n, "Get-SmbSession") ||
      absl::StartsWithIgnoreCase(n, "smbstatus") || absl::StartsWithIgnoreCase(n, "sessions")) {
    return Bit(ProbeGroup::kSessions);
  }
  if (absl::StartsWithIgnoreCase(n, "testparm")) {
    // Samba's configuration (server, client and shares) all comes from testparm.
    return Bit(ProbeGroup::kServer) | Bit(ProbeGroup::kClient) | Bit(ProbeGroup::kShares);
  }
  return 0;
}

uint32_t FailedProbes(const Posture& p) {
  uint32_t mask = 0;
  for (const auto& e : p.probe_errors()) mask |= GroupsOf(e);
  return mask;
}

std::string ProbeErrorNote(const Posture& p, ProbeGroup g) {
  for (const auto& e : p.probe_errors()) {
    if ((GroupsOf(e) & Bit(g)) != 0) {
      return absl::StrCat("probe ", e.probe(), " failed",
                          e.code().empty() ? "" : absl::StrCat(" (", e.code(), ")"), ": ",
                          e.message());
    }
  }
  return "probe failed";
}

bool LabelsMatch(const std::vector<LabelMatch>& want, const Posture& p) {
  const auto& labels = p.host().labels();
  for (const LabelMatch& m : want) {
    auto it = labels.find(m.key);
    if (it == labels.end() || !m.value.Matches(it->second)) return false;
  }
  return true;
}

bool HostnameMatches(const GlobList& g, const Posture& p) {
  return g.Matches(p.host().hostname()) || (!p.host().fqdn().empty() && g.Matches(p.host().fqdn()));
}

Applies SelectorApplies(const HostSelector& s, const Posture& p, uint32_t build) {
  if (!s.platforms.empty()) {
    bool hit = false;
    for (auto pl : s.platforms) hit = hit || pl == p.host().platform();
    if (!hit) return Applies::kNo;
  }
  if (!LabelsMatch(s.host_labels, p)) return Applies::kNo;
  if (!s.except_host_labels.empty() && LabelsMatch(s.except_host_labels, p)) return Applies::kNo;
  if (!s.hostnames.empty() && !HostnameMatches(s.hostnames, p)) return Applies::kNo;
  if (s.windows_build_at_least || s.windows_build_below) {
    if (p.host().platform() != smbfleet::v1::PLATFORM_WINDOWS) return Applies::kNo;
    if (build == 0) return Applies::kUnknown;
    if (s.windows_build_at_least && build < *s.windows_build_at_least) return Applies::kNo;
    if (s.windows_build_below && build >= *s.windows_build_below) return Applies::kNo;
  }
  return Applies::kYes;
}

Applies RuleApplies(const Rule& r, const Posture& p, uint32_t build) {
  if (r.applies_to.empty()) return Applies::kYes;
  Applies result = Applies::kNo;
  for (const HostSelector& s : r.applies_to) {
    Applies a = SelectorApplies(s, p, build);
    if (a == Applies::kYes) return a;
    if (a == Applies::kUnknown) result = a;
  }
  return result;
}

bool Named(absl::Span<const std::string> names, absl::string_view name) {
  for (const std::string& n : names) {
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(n), absl::StripAsciiWhitespace(name))) {
      return true;
    }
  }
  return false;
}

// subsetOf / includes over the entries of a list field.
bool ListHolds(const Expectation& e, const Posture& p) {
  thread_local std::vector<absl::string_view> entries;
  ReadListField(e.field, p, &entries);
  if (e.op == Op::kSubsetOf) {
    for (absl::string_view entry : entries) {
      if (!Named(e.items, entry)) return false;
    }
    return true;
  }
  for (const std::string& want : e.items) {
    bool found = false;
    for (absl::string_view entry : entries) found = found || Named({&want, 1}, entry);
    if (!found) return false;
  }
  return true;
}

bool Holds(const Expectation& e, uint32_t v, const Posture& p) {
  switch (e.op) {
    case Op::kEquals:
      return v == e.value;
    case Op::kAtLeast:
      return v >= e.value;
    case Op::kAtMost:
      return v <= e.value;
    case Op::kEmpty:
      return v == 0;
    case Op::kNotEmpty:
      return v != 0;
    case Op::kSubsetOf:
    case Op::kIncludes:
      return ListHolds(e, p);
  }
  return false;
}

bool IsSpecialShare(const Share& s) { return s.special() || absl::EndsWith(s.name(), "$"); }

// The outcome of one rule on one subject (the host, or one share) while it is built into a
// (possibly reused) result: every field of the result and of its evidence is set or reset.
class Verdict {
 public:
  Verdict(const Posture& p, uint32_t failed, const Rule& rule, absl::string_view share,
          absl::string_view classification, Slots<RuleResult>* results)
      : posture_(p), failed_(failed), out_(results->Next()), evidence_(out_->mutable_evidence()) {
    PUT(out_, rule_id, rule.id);
    PUT(out_, title, rule.title);
    out_->set_severity(rule.severity);
    if (!rule.cis.ws2022().empty() || !rule.cis.ws2025().empty()) {
      auto* cis = out_->mutable_cis();
      PUT(cis, ws2022, rule.cis.ws2022());
      PUT(cis, ws2025, rule.cis.ws2025());
    } else if (out_->has_cis()) {
      out_->clear_cis();
    }
    PUT(out_, share, share);
    PUT(out_, classification, classification);
    PUT(out_, waiver_id, "");
  }

  RuleResult* result() { return out_; }

  void Expect(const Expectation& e, const Observed& v, absl::string_view share) {
    const FieldInfo& info = InfoOf(e.field);
    absl::AlphaNum number(v.value);
    thread_local std::string list;
    absl::string_view observed;
    if (!v.known) {
      observed = "(unset)";
    } else if (info.type == FieldType::kBool) {
      observed = v.value != 0 ? "true" : "false";
    } else if (info.type == FieldType::kDialect) {
      observed = DialectName(static_cast<smbfleet::v1::Dialect>(v.value));
    } else if (info.type == FieldType::kList) {
      list = FormatObserved(info, v, posture_);
      observed = list;
    } else {
      observed = number.Piece();  // kUint
    }
    if (!v.known) {
      if ((failed_ & Bit(info.probe)) != 0) {
        std::string note = ProbeErrorNote(posture_, info.probe);
        NewEvidence(info.name, observed, e.expected, share, note);
        if (Error()) Message(info.name, ": ", note);
      } else {
        NewEvidence(info.name, observed, e.expected, share,
                    "not reported by the agent, or not supported on this build");
        if (Unknown()) Message(info.name, " is not reported");
      }
      return;
    }
    NewEvidence(info.name, observed, e.expected, share, "");
    if (!Holds(e, v.value, posture_) && Fail()) {
      Message(info.name, " is ", observed, ", expected ", e.expected);
    }
  }

  void Sessions(const SessionCheck& check, absl::string_view share) {
    if ((failed_ & Bit(ProbeGroup::kSessions)) != 0) {
      std::string note = ProbeErrorNote(posture_, ProbeGroup::kSessions);
      NewEvidence("sessions", "", "", "", note);
      if (Error()) Message("sessions: ", note);
      return;
    }
    int seen = 0, bad = 0, unknown_dialect = 0, unmeasured = 0;
    thread_local std::string expected_dialect;
    if (check.dialect_at_least) {
      expected_dialect.assign(">= ");
      absl::StrAppend(&expected_dialect, DialectName(*check.dialect_at_least));
    }
    const auto& sessions = posture_.sessions();
    const int n = sessions.size();
    for (int k = 0; k < n; ++k) {
      // Ahead of the loop: the session four on, and the strings of the one two on (each its
      // own allocation), which a violation copies into the evidence.
      if (k + 4 < n) __builtin_prefetch(&sessions.Get(k + 4));
      if (k + 2 < n) {
        const Session& next = sessions.Get(k + 2);
        __builtin_prefetch(&next.session_id());
        __builtin_prefetch(&next.client_address());
        __builtin_prefetch(&next.client_name());
        __builtin_prefetch(&next.user());
      }
      const Session& s = sessions.Get(k);
      if (!share.empty() && !UsesShare(s, share)) continue;
      ++seen;
      if (check.dialect_at_least) {
        if (s.dialect() == smbfleet::v1::DIALECT_UNSPECIFIED) {
          ++unknown_dialect;
        } else if (s.dialect() < *check.dialect_at_least) {
          Violation(s, share, "session.dialect", DialectName(s.dialect()), expected_dialect, &bad);
        }
      }
      if (check.min_rtt_us_at_most && !s.has_min_rtt_us()) ++unmeasured;
      if (check.min_rtt_us_at_most && s.has_min_rtt_us() &&
          s.min_rtt_us() > *check.min_rtt_us_at_most) {
        Violation(s, share, "session.minRttUs", Milliseconds(s.min_rtt_us()),
                  absl::StrCat("<= ", Milliseconds(*check.min_rtt_us_at_most)), &bad);
      }
      if (check.no_guest && s.guest()) Violation(s, share, "session.guest", "true", "false", &bad);
      if (check.no_anonymous && s.anonymous()) {
        Violation(s, share, "session.anonymous", "true", "false", &bad);
      }
    }
    thread_local std::string observed, expected, note;
    observed.clear();
    absl::StrAppend(&observed, seen, " observed, ", bad, " violating");
    SessionExpectation(check, &expected);
    note.clear();
    if (bad > kMaxSessionEvidence) {
      absl::StrAppend(&note, "evidence lists the first ", kMaxSessionEvidence);
    } else if (bad == 0 && unknown_dialect > 0) {
      absl::StrAppend(&note, unknown_dialect, " sessions with unknown dialect");
    } else if (unmeasured > 0) {
      // Not a finding: no round-trip time (another platform, or the read failed: probe_errors).
      absl::StrAppend(&note, unmeasured, " sessions without a measured round-trip time");
    }
    NewEvidence("sessions", observed, expected, share, note);
    if (bad > 0) {
      if (Fail()) Message(bad, " of ", seen, " sessions violate: ", expected);
    } else if (unknown_dialect > 0) {
      if (Unknown()) Message(unknown_dialect, " sessions with unknown dialect");
    }
  }

  // The result of a rule that was not evaluated on this subject.
  void Skip(ComplianceStatus st, absl::string_view message) {
    if (!message.empty()) {
      message_set_ = true;
      PUT(out_, message, message);
    }
    Done(st);
  }

  void UnknownBuild() {
    NewEvidence("host.osBuild", "(unset)", "", "",
                "the rule depends on the Windows build, which the posture does not carry");
    Skip(smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN, "Windows build unknown");
  }

  void Finish() {
    ComplianceStatus st = smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT;
    if (failed_rule_) {
      st = smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT;
    } else if (error_) {
      st = smbfleet::v1::COMPLIANCE_STATUS_ERROR;
    } else if (unknown_) {
      st = smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN;
    }
    Done(st);
  }

 private:
  void Done(ComplianceStatus st) {
    evidence_.Trim();
    if (!message_set_ && !out_->message().empty()) out_->mutable_message()->clear();
    out_->set_status(st);
    out_->set_unwaived_status(st);
  }

  // Every field of the (possibly reused) evidence slot; the session's when there is one.
  void NewEvidence(absl::string_view field, absl::string_view observed, absl::string_view expected,
                   absl::string_view share, absl::string_view note,
                   const Session* session = nullptr) {
    Evidence* ev = evidence_.Next();
    PUT(ev, field, field);
    PUT(ev, observed, observed);
    PUT(ev, expected, expected);
    PUT(ev, share, share);
    PUT(ev, note, note);
    PUT(ev, session_id, session ? absl::string_view(session->session_id()) : "");
    PUT(ev, client_address, session ? absl::string_view(session->client_address()) : "");
    PUT(ev, client_name, session ? absl::string_view(session->client_name()) : "");
    PUT(ev, user, session ? absl::string_view(session->user()) : "");
  }

  static bool UsesShare(const Session& s, absl::string_view share) {
    for (const auto& t : s.shares()) {
      if (absl::EqualsIgnoreCase(t.name(), share)) return true;
    }
    return false;
  }

  static void SessionExpectation(const SessionCheck& c, std::string* s) {
    s->clear();
    if (c.dialect_at_least) absl::StrAppend(s, "dialect >= ", DialectName(*c.dialect_at_least));
    if (c.no_guest) absl::StrAppend(s, s->empty() ? "" : ", ", "no guest sessions");
    if (c.no_anonymous) absl::StrAppend(s, s->empty() ? "" : ", ", "no anonymous sessions");
    if (c.min_rtt_us_at_most) {
      absl::StrAppend(s, s->empty() ? "" : ", ",
                      "lowest round-trip time <= ", Milliseconds(*c.min_rtt_us_at_most));
    }
  }

  // 23400 -> "23.4 ms", 8900 -> "8.90 ms", 12 -> "0.012 ms".
  static std::string Milliseconds(uint32_t us) {
    double ms = us / 1000.0;
    if (us >= 10000) return absl::StrFormat("%.1f ms", ms);
    if (us >= 1000) return absl::StrFormat("%.2f ms", ms);
    return absl::StrFormat("%.3f ms", ms);
  }

  void Violation(const Session& s, absl::string_view share, absl::string_view field,
                 absl::string_view observed, absl::string_view expected, int* bad) {
    if (++*bad > kMaxSessionEvidence) return;
    NewEvidence(field, observed, expected, share, "", &s);
  }

  // Each returns true when its message becomes the result's message (the first failure wins
  // over the first error, which wins over the first unknown).
  bool Fail() {
    bool first = !failed_rule_;
    failed_rule_ = true;
    return first;
  }
  bool Error() {
    bool first = !failed_rule_ && !error_;
    error_ = true;
    return first;
  }
  bool Unknown() {
    bool first = !failed_rule_ && !error_ && !unknown_;
    unknown_ = true;
    return first;
  }
  // Written into the result's own string, whose capacity is kept from host to host.
  template <typename... Args>
  void Message(const Args&... args) {
    message_set_ = true;
    std::string* m = out_->mutable_message();
    m->clear();
    absl::StrAppend(m, args...);
  }

  const Posture& posture_;
  uint32_t failed_;
  RuleResult* out_;
  Slots<Evidence> evidence_;
  bool failed_rule_ = false;
  bool error_ = false;
  bool unknown_ = false;
  bool message_set_ = false;
};

void ApplyWaivers(const Policy& policy, absl::Span<const smbfleet::v1::Waiver> waivers,
                  const Posture& p, absl::Time now, RuleResult* res) {
  if (res->status() != smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT) return;
  for (auto list : {absl::Span<const smbfleet::v1::Waiver>(policy.waivers), waivers}) {
    for (const auto& w : list) {
      if (WaiverApplies(w, res->rule_id(), p, res->share(), now)) {
        res->set_status(smbfleet::v1::COMPLIANCE_STATUS_WAIVED);
        res->set_waiver_id(w.id());
        res->set_message(absl::StrCat(res->message(), " (waived by ", w.id(), ", approved by ",
                                      w.approved_by(), ")"));
        return;
      }
    }
  }
}

void Count(ComplianceStatus st, HostEvaluation* out) {
  switch (st) {
    case smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT:
      out->set_compliant(out->compliant() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT:
      out->set_non_compliant(out->non_compliant() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN:
      out->set_unknown(out->unknown() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE:
      out->set_not_applicable(out->not_applicable() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_WAIVED:
      out->set_waived(out->waived() + 1);
      break;
    case smbfleet::v1::COMPLIANCE_STATUS_ERROR:
      out->set_errors(out->errors() + 1);
      break;
    default:
      break;
  }
}

}  // namespace

namespace {

// Which classification rules the host's labels and name allow (the same for all its shares).
void HostEligibleRulesInto(const Classification& c, const Posture& p, std::vector<char>* out) {
  std::vector<char>& ok = *out;
  ok.assign(c.rules.size(), 0);
  for (size_t i = 0; i < c.rules.size(); ++i) {
    const ClassificationRule& r = c.rules[i];
    ok[i] =
        (r.hostnames.empty() || HostnameMatches(r.hostnames, p)) && LabelsMatch(r.host_labels, p);
  }
}

std::vector<char> HostEligibleRules(const Classification& c, const Posture& p) {
  std::vector<char> ok;
  HostEligibleRulesInto(c, p, &ok);
  return ok;
}

// Copies and ASCII-lowercases in one pass into a buffer that only grows; returns the lowered
// text (a view of the buffer) and sets *chars to its CharSet.
absl::string_view LowerInto(absl::string_view s, std::string* buffer, uint64_t* chars) {
  if (buffer->size() < s.size()) buffer->resize(s.size());
  char* out = buffer->data();
  uint64_t set = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = absl::ascii_tolower(s[i]);
    out[i] = c;
    set |= CharBit(c);
  }
  *chars = set;
  return absl::string_view(out, s.size());
}

ShareClass ClassifyShareWith(const Classification& c, const Posture& p, const Share& share,
                             const std::vector<char>& eligible) {
  for (const ClassificationOverride& o : c.overrides) {
    if ((o.host.Matches(p.host().hostname()) ||
         (!p.host().fqdn().empty() && o.host.Matches(p.host().fqdn()))) &&
        o.share.Matches(share.name())) {
      return ShareClass{o.class_index, o.name};
    }
  }
  // Lowered once: every rule's patterns are matched against the same two strings.
  thread_local std::string name_buffer, path_buffer;
  uint64_t name_chars = 0, path_chars = 0;
  const absl::string_view name = LowerInto(share.name(), &name_buffer, &name_chars);
  const absl::string_view path = LowerInto(share.path(), &path_buffer, &path_chars);
  for (size_t i = 0; i < c.rules.size(); ++i) {
    const ClassificationRule& r = c.rules[i];
    if (!eligible[i]) continue;
    if (!r.share_names.empty() && !r.share_names.MatchesLowered(name, name_chars)) continue;
    if (!r.paths.empty() && !r.paths.MatchesLowered(path, path_chars)) continue;
    return ShareClass{r.class_index, r.name};
  }
  return ShareClass{c.default_class, "default"};
}

}  // namespace

ShareClass ClassifyShare(const Classification& c, const Posture& p, const Share& share) {
  return ClassifyShareWith(c, p, share, HostEligibleRules(c, p));
}

std::vector<smbfleet::v1::ShareClassification> ClassifyShares(const Policy& policy,
                                                              const Posture& posture) {
  std::vector<smbfleet::v1::ShareClassification> out;
  for (const Share& s : posture.shares()) {
    ShareClass sc = ClassifyShare(policy.classification, posture, s);
    smbfleet::v1::ShareClassification c;
    c.set_share(s.name());
    c.set_classification(policy.classification.classes[sc.class_index]);
    c.set_rule(std::string(sc.rule));
    out.push_back(std::move(c));
  }
  return out;
}

uint32_t WindowsBuild(const smbfleet::v1::HostInfo& host) {
  auto leading = [](absl::string_view s) -> uint32_t {
    size_t i = 0;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    uint32_t v = 0;
    if (i == 0 || !absl::SimpleAtoi(s.substr(0, i), &v)) return 0;
    return v;
  };
  if (uint32_t b = leading(host.os_build()); b >= 1000) return b;
  absl::string_view v = host.os_version();  // "10.0.20348"
  size_t first = v.find('.');
  size_t second = first == absl::string_view::npos ? first : v.find('.', first + 1);
  if (second != absl::string_view::npos) {
    if (uint32_t b = leading(v.substr(second + 1)); b >= 1000) return b;
  }
  return 0;
}

bool WaiverApplies(const smbfleet::v1::Waiver& w, absl::string_view rule_id, const Posture& p,
                   absl::string_view share, absl::Time now) {
  if (w.rule_id() != "*" && w.rule_id() != rule_id) return false;
  if (!w.has_expires_at() || ToTime(w.expires_at()) <= now) return false;
  if (w.has_created_at() && ToTime(w.created_at()) > now) return false;
  if (w.justification().empty() || w.approved_by().empty()) return false;
  bool scoped = false;
  if (!w.host().empty()) {
    scoped = true;
    if (!absl::EqualsIgnoreCase(w.host(), p.host().hostname()) &&
        !absl::EqualsIgnoreCase(w.host(), p.host().fqdn())) {
      return false;
    }
  }
  if (!w.label_key().empty()) {
    scoped = true;
    auto it = p.host().labels().find(w.label_key());
    if (it == p.host().labels().end() || it->second != w.label_value()) return false;
  }
  if (!w.share().empty()) {
    scoped = true;
    if (!absl::EqualsIgnoreCase(w.share(), share)) return false;
  }
  return scoped;
}

absl::Status ValidateWaiver(const smbfleet::v1::Waiver& w) {
  std::vector<std::string> missing;
  if (w.id().empty()) missing.push_back("id");
  if (w.rule_id().empty()) missing.push_back("ruleId (a rule id or *)");
  if (w.justification().empty()) missing.push_back("justification");
  if (w.approved_by().empty()) missing.push_back("approvedBy");
  if (!w.has_expires_at()) missing.push_back("expiresAt");
  if (w.host().empty() && w.label_key().empty() && w.share().empty()) {
    missing.push_back("a scope (host, labelKey/labelValue or share)");
  }
  std::string prefix = absl::StrCat("waiver '", w.id(), "': ");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) absl::StrAppend(&list, list.empty() ? "" : ", ", m);
    return absl::InvalidArgumentError(absl::StrCat(prefix, "missing ", list));
  }
  if (!w.host().empty() && !w.label_key().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "host and label are alternative scopes; give one"));
  }
  if (!w.label_key().empty() && !w.share().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "share narrows a host waiver and cannot be combined with a label"));
  }
  if (w.has_created_at() && ToTime(w.created_at()) >= ToTime(w.expires_at())) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "expiresAt is not after createdAt"));
  }
  return absl::OkStatus();
}

namespace {

bool SameLabels(const google::protobuf::Map<std::string, std::string>& a,
                const google::protobuf::Map<std::string, std::string>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

// `out` is not cleared: its messages are reused and every field is set or reset below, so a
// field added to HostEvaluation, RuleResult, Evidence or ShareClassification must be set here
// too (EvaluateTest.ReusedEvaluationEqualsAFreshOne checks it).
void EvaluateHostInto(const Policy& policy, const Posture& p,
                      absl::Span<const smbfleet::v1::Waiver> waivers, absl::Time now,
                      HostEvaluation* out) {
  PUT(out, hostname, p.host().hostname());
  PUT(out, policy_name, policy.name);
  PUT(out, policy_version, policy.version);
  SetTimestamp(now, out->mutable_evaluated_at());
  if (p.has_collected_at()) {
    *out->mutable_posture_collected_at() = p.collected_at();
  } else if (out->has_posture_collected_at()) {
    out->clear_posture_collected_at();
  }
  if (!SameLabels(out->labels(), p.host().labels())) *out->mutable_labels() = p.host().labels();
  out->set_compliant(0);
  out->set_non_compliant(0);
  out->set_unknown(0);
  out->set_not_applicable(0);
  out->set_waived(0);
  out->set_errors(0);

  const Classification& cls = policy.classification;
  // Classes per share, computed once for every share rule.
  thread_local std::vector<int> share_class;
  share_class.assign(static_cast<size_t>(p.shares_size()), 0);
  thread_local std::vector<char> eligible;
  HostEligibleRulesInto(cls, p, &eligible);
  Slots<smbfleet::v1::ShareClassification> classifications(out->mutable_classifications());
  for (int i = 0; i < p.shares_size(); ++i) {
    ShareClass sc = ClassifyShareWith(cls, p, p.shares(i), eligible);
    share_class[static_cast<size_t>(i)] = sc.class_index;
    auto* c = classifications.Next();
    PUT(c, share, p.shares(i).name());
    PUT(c, classification, cls.classes[static_cast<size_t>(sc.class_index)]);
    PUT(c, rule, sc.rule);
  }
  classifications.Trim();

  const uint32_t build = WindowsBuild(p.host());
  const uint32_t failed = FailedProbes(p);
  Slots<RuleResult> results(out->mutable_results());
  for (const Rule& rule : policy.rules) {
    Applies applies = RuleApplies(rule, p, build);
    if (applies != Applies::kYes) {
      Verdict v(p, failed, rule, "", "", &results);
      if (applies == Applies::kUnknown) {
        v.UnknownBuild();
      } else {
        v.Skip(smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE, "");
      }
      Count(v.result()->status(), out);
      continue;
    }
    if (!rule.share_scoped) {
      Verdict v(p, failed, rule, "", "", &results);
      for (const Expectation& e : rule.expect) v.Expect(e, ReadHostField(e.field, p), {});
      if (rule.sessions.active()) v.Sessions(rule.sessions, {});
      v.Finish();
      ApplyWaivers(policy, waivers, p, now, v.result());
      Count(v.result()->status(), out);
      continue;
    }
    int matched = 0;
    for (int i = 0; i < p.shares_size(); ++i) {
      const Share& share = p.shares(i);
      if (!rule.include_special_shares && IsSpecialShare(share)) continue;
      int ci = share_class[static_cast<size_t>(i)];
      if (!rule.share_classes.empty()) {
        bool hit = false;
        for (int c : rule.share_classes) hit = hit || c == ci;
        if (!hit) continue;
      }
      if (!rule.share_names.empty() && !rule.share_names.Matches(share.name())) continue;
      if (rule.share_compressibility.active() &&
          !rule.share_compressibility.Holds(
              ShareCompressibility(p, share, cls.classes[static_cast<size_t>(ci)]).ratio)) {
        continue;
      }
      ++matched;
      Verdict v(p, failed, rule, share.name(), cls.classes[static_cast<size_t>(ci)], &results);
      for (const Expectation& e : rule.expect) {
        v.Expect(e, ReadShareField(e.field, p, share), share.name());
      }
      if (rule.sessions.active()) v.Sessions(rule.sessions, share.name());
      v.Finish();
      ApplyWaivers(policy, waivers, p, now, v.result());
      Count(v.result()->status(), out);
    }
    if (matched == 0) {
      Verdict v(p, failed, rule, "", "", &results);
      if ((failed & Bit(ProbeGroup::kShares)) != 0 && p.shares_size() == 0) {
        v.Skip(smbfleet::v1::COMPLIANCE_STATUS_ERROR, ProbeErrorNote(p, ProbeGroup::kShares));
      } else {
        v.Skip(smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE, "no share matches the rule");
      }
      Count(v.result()->status(), out);
    }
  }
  results.Trim();
}

HostEvaluation EvaluateHost(const Policy& policy, const Posture& posture,
                            absl::Span<const smbfleet::v1::Waiver> waivers, absl::Time now) {
  HostEvaluation out;
  EvaluateHostInto(policy, posture, waivers, now, &out);
  return out;
}

absl::string_view StatusName(ComplianceStatus s) {
  switch (s) {
    case smbfleet::v1::COMPLIANCE_STATUS_COMPLIANT:
      return "COMPLIANT";
    case smbfleet::v1::COMPLIANCE_STATUS_NON_COMPLIANT:
      return "NON_COMPLIANT";
    case smbfleet::v1::COMPLIANCE_STATUS_UNKNOWN:
      return "UNKNOWN";
    case smbfleet::v1::COMPLIANCE_STATUS_NOT_APPLICABLE:
      return "NOT_APPLICABLE";
    case smbfleet::v1::COMPLIANCE_STATUS_WAIVED:
      return "WAIVED";
    case smbfleet::v1::COMPLIANCE_STATUS_ERROR:
      return "ERROR";
    default:
      return "UNSPECIFIED";
  }
}

#undef PUT

}  // namespace smbfleet::policy
