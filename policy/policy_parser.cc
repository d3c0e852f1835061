// ParsePolicy: the strict reader of policy files. Every problem is collected with file and line
// so that a person fixes a file in one pass.

#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/time_util.h"
#include "policy/policy.h"
#include "yaml-cpp/yaml.h"

namespace smbfleet::policy {
namespace {

using smbfleet::v1::PlanPhase;
using smbfleet::v1::Severity;

constexpr size_t kMaxPolicyBytes = 4 << 20;

class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}

  void Add(const YAML::Node& at, absl::string_view path, absl::string_view what) {
    YAML::Mark mark = at.Mark();
    if (mark.line >= 0) {
      list_.push_back(absl::StrCat(file_, ":", mark.line + 1, ": ", path, ": ", what));
    } else {
      list_.push_back(absl::StrCat(file_, ": ", path, ": ", what));
    }
  }
  bool empty() const { return list_.empty(); }
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(list_.size(), list_.size() == 1 ? " problem" : " problems", " in policy:\n  ",
                     absl::StrJoin(list_, "\n  ")));
  }

 private:
  std::string file_;
  std::vector<std::string> list_;
};

std::string Describe(const YAML::Node& n) {
  if (n.IsScalar()) return absl::StrCat("'", n.Scalar(), "'");
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

std::string Sub(absl::string_view prefix, absl::string_view key) {
  return prefix.empty() ? std::string(key) : absl::StrCat(prefix, ".", key);
}
std::string Index(absl::string_view prefix, size_t i) { return absl::StrCat(prefix, "[", i, "]"); }

// Keys of `map` not in `allowed` are errors; a non-mapping is an error too.
bool CheckMap(const YAML::Node& map, std::initializer_list<absl::string_view> allowed,
              absl::string_view path, Problems* p) {
  if (!map.IsMap()) {
    p->Add(map, path, absl::StrCat("expected a mapping, got ", Describe(map)));
    return false;
  }
  for (const auto& kv : map) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    bool known = false;
    for (absl::string_view a : allowed) known = known || a == key;
    if (!known) {
      p->Add(kv.first, Sub(path, key),
             absl::StrCat("unknown key (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return true;
}

YAML::Node Get(const YAML::Node& map, absl::string_view key) {
  const YAML::Node& m = map;
  return m[std::string(key)];
}

bool Present(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

bool ReadStr(const YAML::Node& map, absl::string_view key, absl::string_view path, std::string* out,
             Problems* p, bool required = false) {
  YAML::Node n = Get(map, key);
  if (!Present(n)) {
    if (required) p->Add(map, Sub(path, key), "required (expected a string)");
    return false;
  }
  if (!n.IsScalar()) {
    p->Add(n, Sub(path, key), absl::StrCat("expected a string, got ", Describe(n)));
    return false;
  }
  if (required && n.Scalar().empty()) {
    p->Add(n, Sub(path, key), "expected a non-empty string");
    return false;
  }
  *out = n.Scalar();
  return true;
}

bool ParseBoolScalar(const YAML::Node& n, bool* out) {
  if (!n.IsScalar()) return false;
  std::string v = absl::AsciiStrToLower(n.Scalar());
  if (v == "true" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "false" || v == "no" || v == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool ReadBoolKey(const YAML::Node& map, absl::string_view key, absl::string_view path, bool* out,
                 Problems* p) {
  YAML::Node n = Get(map, key);
  if (!Present(n)) return false;
  if (!ParseBoolScalar(n, out)) {
    p->Add(n, Sub(path, key), absl::StrCat("expected true or false, got ", Describe(n)));
    return false;
  }
  return true;
}

bool ReadUintNode(const YAML::Node& n, absl::string_view path, uint32_t* out, Problems* p) {
  uint32_t v = 0;
  if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v)) {
    p->Add(n, path, absl::StrCat("expected a whole number, got ", Describe(n)));
    return false;
  }
  *out = v;
  return true;
}

// A list of strings; a single string is accepted as a list of one.
std::vector<std::pair<std::string, YAML::Node>> ReadStrList(const YAML::Node& map,
                                                            absl::string_view key,
                                                            absl::string_view path, Problems* p) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  YAML::Node n = Get(map, key);
  if (!Present(n)) return out;
  if (n.IsScalar()) {
    out.emplace_back(n.Scalar(), n);
    return out;
  }
  if (!n.IsSequence()) {
    p->Add(n, Sub(path, key), absl::StrCat("expected a list of strings, got ", Describe(n)));
    return out;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      p->Add(n[i], Index(Sub(path, key), i),
             absl::StrCat("expected a string, got ", Describe(n[i])));
      continue;
    }
    out.emplace_back(n[i].Scalar(), n[i]);
  }
  return out;
}

void ReadGlobs(const YAML::Node& map, absl::string_view key, absl::string_view path, GlobList* out,
               Problems* p) {
  auto items = ReadStrList(map, key, path, p);
  for (size_t i = 0; i < items.size(); ++i) {
    auto g = Glob::Compile(items[i].first);
    if (!g.ok()) {
      p->Add(items[i].second, Index(Sub(path, key), i),
             absl::StrCat("bad pattern: ", g.status().message()));
      continue;
    }
    out->Add(*std::move(g));
  }
}

void ReadLabels(const YAML::Node& map, absl::string_view key, absl::string_view path,
                std::vector<LabelMatch>* out, Problems* p) {
  YAML::Node n = Get(map, key);
  if (!Present(n)) return;
  std::string lpath = Sub(path, key);
  if (!n.IsMap()) {
    p->Add(n, lpath,
           absl::StrCat("expected a mapping of label names to value patterns, got ", Describe(n)));
    return;
  }
  for (const auto& kv : n) {
    std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (k.empty()) {
      p->Add(kv.first, lpath, "expected a label name");
      continue;
    }
    if (!kv.second.IsScalar()) {
      p->Add(kv.second, Sub(lpath, k),
             absl::StrCat("expected a value pattern, got ", Describe(kv.second)));
      continue;
    }
    auto g = Glob::Compile(kv.second.Scalar());
    if (!g.ok()) {
      p->Add(kv.second, Sub(lpath, k), absl::StrCat("bad pattern: ", g.status().message()));
      continue;
    }
    out->push_back(LabelMatch{k, *std::move(g)});
  }
}

bool ParsePlatform(absl::string_view s, smbfleet::v1::Platform* out) {
  std::string v = absl::AsciiStrToLower(s);
  if (v == "windows") {
    *out = smbfleet::v1::PLATFORM_WINDOWS;
    return true;
  }
  if (v == "samba") {
    *out = smbfleet::v1::PLATFORM_SAMBA;
    return true;
  }
  return false;
}

void ReadHostSelector(const YAML::Node& n, absl::string_view path, HostSelector* sel, Problems* p) {
  if (!CheckMap(n, {"platforms", "windowsBuild", "hostLabels", "hostnames", "exceptHostLabels"},
                path, p)) {
    return;
  }
  for (const auto& [name, node] : ReadStrList(n, "platforms", path, p)) {
    smbfleet::v1::Platform pl;
    if (!ParsePlatform(name, &pl)) {
      p->Add(node, Sub(path, "platforms"),
             absl::StrCat("unknown platform '", name, "' (expected windows or samba)"));
      continue;
    }
    sel->platforms.push_back(pl);
  }
  YAML::Node wb = Get(n, "windowsBuild");
  if (Present(wb)) {
    std::string wpath = Sub(path, "windowsBuild");
    if (CheckMap(wb, {"atLeast", "below"}, wpath, p)) {
      uint32_t v = 0;
      if (Present(Get(wb, "atLeast")) &&
          ReadUintNode(Get(wb, "atLeast"), Sub(wpath, "atLeast"), &v, p)) {
        sel->windows_build_at_least = v;
      }
      if (Present(Get(wb, "below")) && ReadUintNode(Get(wb, "below"), Sub(wpath, "below"), &v, p)) {
        sel->windows_build_below = v;
      }
      if (!sel->windows_build_at_least && !sel->windows_build_below && p->empty()) {
        p->Add(wb, wpath, "expected atLeast and/or below");
      }
    }
  }
  ReadLabels(n, "hostLabels", path, &sel->host_labels, p);
  ReadLabels(n, "exceptHostLabels", path, &sel->except_host_labels, p);
  ReadGlobs(n, "hostnames", path, &sel->hostnames, p);
}

// A compression ratio bound: a number from 1 to 1000 (input bytes per compressed byte).
bool ReadRatioNode(const YAML::Node& n, absl::string_view path, double* out, Problems* p) {
  double v = 0;
  if (!n.IsScalar() || !absl::SimpleAtod(n.Scalar(), &v) || !std::isfinite(v)) {
    p->Add(n, path, absl::StrCat("expected a compression ratio such as 1.5, got ", Describe(n)));
    return false;
  }
  if (v < 1 || v > 1000) {
    p->Add(n, path,
           absl::StrCat("compression ratio ", n.Scalar(),
                        " is outside 1..1000 (input bytes per compressed byte)"));
    return false;
  }
  *out = v;
  return true;
}

void ReadCompressibility(const YAML::Node& n, absl::string_view path, CompressibilityBounds* out,
                         Problems* p) {
  if (!CheckMap(n, {"atLeast", "below"}, path, p)) return;
  double v = 0;
  YAML::Node at_least = Get(n, "atLeast");
  if (Present(at_least) && ReadRatioNode(at_least, Sub(path, "atLeast"), &v, p)) {
    out->at_least = v;
  }
  YAML::Node below = Get(n, "below");
  if (Present(below) && ReadRatioNode(below, Sub(path, "below"), &v, p)) out->below = v;
  if (!Present(at_least) && !Present(below)) {
    p->Add(n, path, "expected atLeast and/or below");
  } else if (out->at_least && out->below && *out->at_least >= *out->below) {
    p->Add(n, path,
           absl::StrCat("atLeast ", *out->at_least, " is not below ", *out->below,
                        ": no share can match"));
  }
}

void ReadAppliesTo(const YAML::Node& n, absl::string_view path, std::vector<HostSelector>* out,
                   Problems* p) {
  if (!n.IsMap()) {
    p->Add(n, path, absl::StrCat("expected a mapping, got ", Describe(n)));
    return;
  }
  YAML::Node any = Get(n, "anyOf");
  if (Present(any)) {
    CheckMap(n, {"anyOf"}, path, p);
    std::string apath = Sub(path, "anyOf");
    if (!any.IsSequence() || any.size() == 0) {
      p->Add(any, apath, "expected a non-empty list of host selectors");
      return;
    }
    for (size_t i = 0; i < any.size(); ++i) {
      HostSelector sel;
      ReadHostSelector(any[i], Index(apath, i), &sel, p);
      out->push_back(std::move(sel));
    }
    return;
  }
  HostSelector sel;
  ReadHostSelector(n, path, &sel, p);
  out->push_back(std::move(sel));
}

bool ParseExpectedValue(const FieldInfo& info, const YAML::Node& n, absl::string_view path,
                        uint32_t* out, Problems* p) {
  switch (info.type) {
    case FieldType::kBool: {
      bool b = false;
      if (!ParseBoolScalar(n, &b)) {
        p->Add(n, path,
               absl::StrCat(info.name, " is a boolean: expected true or false, got ", Describe(n)));
        return false;
      }
      *out = b ? 1 : 0;
      return true;
    }
    case FieldType::kDialect: {
      smbfleet::v1::Dialect d;
      if (!n.IsScalar() || !ParseDialectName(n.Scalar(), &d)) {
        p->Add(n, path,
               absl::StrCat(info.name,
                            " is a dialect: expected one of SMB1, SMB_2_0_2, "
                            "SMB_2_1, SMB_3_0, SMB_3_0_2, SMB_3_1_1, got ",
                            Describe(n)));
        return false;
      }
      *out = static_cast<uint32_t>(d);
      return true;
    }
    case FieldType::kUint:
      return ReadUintNode(n, path, out, p);
    case FieldType::kList:
      p->Add(n, path,
             absl::StrCat(info.name,
                          " is a list: expected {empty: true}, {empty: false}, "
                          "{subsetOf: [names]} or {includes: [names]}"));
      return false;
  }
  return false;
}

// The names of a subsetOf or includes matcher: a list of non-empty strings without duplicates,
// each one of the field's fixed names when it has them. `includes` needs at least one name;
// `subsetOf: []` means the list must be empty.
bool ReadNameList(const FieldInfo& info, const YAML::Node& n, absl::string_view path,
                  bool non_empty, std::vector<std::string>* out, Problems* p) {
  if (!n.IsSequence()) {
    p->Add(n, path, absl::StrCat("expected a list of names, got ", Describe(n)));
    return false;
  }
  if (non_empty && n.size() == 0) {
    p->Add(n, path, "expected at least one name");
    return false;
  }
  absl::Span<const absl::string_view> vocabulary = ListVocabulary(info.field);
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string ipath = Index(path, i);
    if (!n[i].IsScalar() || n[i].Scalar().empty()) {
      p->Add(n[i], ipath, absl::StrCat("expected a name, got ", Describe(n[i])));
      ok = false;
      continue;
    }
    const std::string& name = n[i].Scalar();
    if (!vocabulary.empty()) {
      bool known = false;
      for (absl::string_view v : vocabulary) known = known || absl::EqualsIgnoreCase(v, name);
      if (!known) {
        p->Add(n[i], ipath,
               absl::StrCat("unknown name '", name, "' for ", info.name,
                            " (expected one of: ", absl::StrJoin(vocabulary, ", "), ")"));
        ok = false;
        continue;
      }
    }
    for (const std::string& seen : *out) {
      if (absl::EqualsIgnoreCase(seen, name)) {
        p->Add(n[i], ipath, absl::StrCat("duplicate name '", name, "'"));
        ok = false;
      }
    }
    out->push_back(name);
  }
  return ok;
}

void ReadExpect(const YAML::Node& n, absl::string_view path, bool share_scoped,
                std::vector<Expectation>* out, Problems* p) {
  if (!n.IsMap()) {
    p->Add(n, path,
           absl::StrCat("expected a mapping of field names to expected values, got ", Describe(n)));
    return;
  }
  for (const auto& kv : n) {
    std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    std::string fpath = Sub(path, name);
    const FieldInfo* info = LookupField(name);
    if (info == nullptr) {
      std::vector<absl::string_view> names;
      for (const FieldInfo& f : AllFields()) names.push_back(f.name);
      p->Add(kv.first, fpath,
             absl::StrCat("unknown field (expected one of: ", absl::StrJoin(names, ", "), ")"));
      continue;
    }
    if (info->scope == FieldScope::kShare && !share_scoped) {
      p->Add(kv.first, fpath, "a share field needs a `shares:` selector on the rule");
      continue;
    }
    const YAML::Node& v = kv.second;
    Expectation e{info->field, Op::kEquals, 0, {}, {}};
    if (v.IsMap()) {
      if (!CheckMap(v, {"equals", "atLeast", "atMost", "empty", "subsetOf", "includes"}, fpath,
                    p)) {
        continue;
      }
      if (v.size() != 1) {
        p->Add(v, fpath,
               "expected exactly one of equals, atLeast, atMost, empty, subsetOf, includes");
        continue;
      }
      std::string op = v.begin()->first.Scalar();
      // A copy: the node behind the iterator dies with the temporary iterator (ASan found it).
      const YAML::Node arg = v.begin()->second;
      std::string opath = Sub(fpath, op);
      if (op == "empty") {
        bool b = false;
        if (info->type != FieldType::kList) {
          p->Add(arg, opath, absl::StrCat(info->name, " is not a list"));
          continue;
        }
        if (!ParseBoolScalar(arg, &b)) {
          p->Add(arg, opath, absl::StrCat("expected true or false, got ", Describe(arg)));
          continue;
        }
        e.op = b ? Op::kEmpty : Op::kNotEmpty;
      } else if (op == "subsetOf" || op == "includes") {
        if (info->type != FieldType::kList) {
          p->Add(arg, opath,
                 absl::StrCat(op, " needs a list field; ", info->name, " is not a list"));
          continue;
        }
        if (!ReadNameList(*info, arg, opath, op == "includes", &e.items, p)) continue;
        e.op = op == "subsetOf" ? Op::kSubsetOf : Op::kIncludes;
      } else {
        if (op == "atLeast" || op == "atMost") {
          if (info->type == FieldType::kBool || info->type == FieldType::kList) {
            p->Add(arg, opath,
                   absl::StrCat(op, " needs a number or dialect field; ", info->name,
                                info->type == FieldType::kBool ? " is a boolean" : " is a list"));
            continue;
          }
          e.op = op == "atLeast" ? Op::kAtLeast : Op::kAtMost;
        }
        if (!ParseExpectedValue(*info, arg, opath, &e.value, p)) continue;
      }
    } else if (!ParseExpectedValue(*info, v, fpath, &e.value, p)) {
      continue;
    }
    switch (e.op) {
      case Op::kEquals:
        e.expected = FormatValue(info->type, e.value);
        break;
      case Op::kAtLeast:
        e.expected = absl::StrCat(">= ", FormatValue(info->type, e.value));
        break;
      case Op::kAtMost:
        e.expected = absl::StrCat("<= ", FormatValue(info->type, e.value));
        break;
      case Op::kEmpty:
        e.expected = "empty";
        break;
      case Op::kNotEmpty:
        e.expected = "not empty";
        break;
      case Op::kSubsetOf:
        e.expected = absl::StrCat("only [", absl::StrJoin(e.items, ", "), "]");
        break;
      case Op::kIncludes:
        e.expected = absl::StrCat("includes [", absl::StrJoin(e.items, ", "), "]");
        break;
    }
    out->push_back(std::move(e));
  }
}

void ReadSessions(const YAML::Node& n, absl::string_view path, SessionCheck* out, Problems* p) {
  if (!CheckMap(n, {"dialect", "guest", "anonymous", "minRttUs"}, path, p)) return;
  YAML::Node d = Get(n, "dialect");
  if (Present(d)) {
    std::string dpath = Sub(path, "dialect");
    if (CheckMap(d, {"atLeast"}, dpath, p)) {
      YAML::Node a = Get(d, "atLeast");
      smbfleet::v1::Dialect dialect;
      if (!Present(a) || !a.IsScalar() || !ParseDialectName(a.Scalar(), &dialect)) {
        p->Add(Present(a) ? a : d, Sub(dpath, "atLeast"),
               "expected one of SMB1, SMB_2_0_2, SMB_2_1, SMB_3_0, SMB_3_0_2, SMB_3_1_1");
      } else {
        out->dialect_at_least = dialect;
      }
    }
  }
  YAML::Node rtt = Get(n, "minRttUs");
  if (Present(rtt)) {
    std::string rpath = Sub(path, "minRttUs");
    uint32_t v = 0;
    if (CheckMap(rtt, {"atMost"}, rpath, p)) {
      if (!Present(Get(rtt, "atMost"))) {
        p->Add(rtt, rpath, "expected {atMost: MICROSECONDS}");
      } else if (ReadUintNode(Get(rtt, "atMost"), Sub(rpath, "atMost"), &v, p)) {
        out->min_rtt_us_at_most = v;
      }
    }
  }
  bool allowed = true;
  if (ReadBoolKey(n, "guest", path, &allowed, p)) out->no_guest = !allowed;
  allowed = true;
  if (ReadBoolKey(n, "anonymous", path, &allowed, p)) out->no_anonymous = !allowed;
  if (!out->active() && Present(Get(n, "guest")) == false &&
      Present(Get(n, "anonymous")) == false && !Present(d) && !Present(rtt)) {
    p->Add(n, path, "expected dialect, guest: false, anonymous: false or minRttUs");
  }
}

bool ParsePhase(absl::string_view s, PlanPhase* out) {
  if (s == "audit")
    *out = smbfleet::v1::PLAN_PHASE_AUDIT;
  else if (s == "protect")
    *out = smbfleet::v1::PLAN_PHASE_PROTECT;
  else if (s == "require")
    *out = smbfleet::v1::PLAN_PHASE_REQUIRE;
  else if (s == "disable")
    *out = smbfleet::v1::PLAN_PHASE_DISABLE;
  else
    return false;
  return true;
}

bool ParseSeverity(absl::string_view s, Severity* out) {
  if (s == "info")
    *out = smbfleet::v1::SEVERITY_INFO;
  else if (s == "low")
    *out = smbfleet::v1::SEVERITY_LOW;
  else if (s == "medium")
    *out = smbfleet::v1::SEVERITY_MEDIUM;
  else if (s == "high")
    *out = smbfleet::v1::SEVERITY_HIGH;
  else if (s == "critical")
    *out = smbfleet::v1::SEVERITY_CRITICAL;
  else
    return false;
  return true;
}

void ReadRemediation(const YAML::Node& n, absl::string_view path, bool share_scoped,
                     std::vector<RemediationStep>* out, Problems* p) {
  if (!n.IsSequence()) {
    p->Add(n, path, absl::StrCat("expected a list of {setting, value, phase}, got ", Describe(n)));
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string spath = Index(path, i);
    const YAML::Node& s = n[i];
    if (!CheckMap(s, {"setting", "value", "phase", "platforms"}, spath, p)) continue;
    std::vector<smbfleet::v1::Platform> platforms;
    for (const auto& [name, node] : ReadStrList(s, "platforms", spath, p)) {
      smbfleet::v1::Platform pl;
      if (!ParsePlatform(name, &pl)) {
        p->Add(node, Sub(spath, "platforms"),
               absl::StrCat("unknown platform '", name, "' (expected windows or samba)"));
        continue;
      }
      platforms.push_back(pl);
    }
    std::string setting, value, phase;
    bool ok = ReadStr(s, "setting", spath, &setting, p, true);
    ok = ReadStr(s, "value", spath, &value, p, true) && ok;
    ok = ReadStr(s, "phase", spath, &phase, p, true) && ok;
    if (!ok) continue;
    auto info = LookupSetting(setting);
    if (!info.ok()) {
      std::vector<absl::string_view> names;
      for (const SettingInfo& si : AllSettings()) names.push_back(si.name);
      p->Add(Get(s, "setting"), Sub(spath, "setting"),
             absl::StrCat(info.status().message(),
                          " (expected one of: ", absl::StrJoin(names, ", "), ")"));
      continue;
    }
    if (info->scope == SettingScope::kShare && !share_scoped) {
      p->Add(Get(s, "setting"), Sub(spath, "setting"),
             "a share setting needs a `shares:` selector on the rule");
      continue;
    }
    auto norm = NormalizeSettingValue(*info, value);
    if (!norm.ok()) {
      p->Add(Get(s, "value"), Sub(spath, "value"), norm.status().message());
      continue;
    }
    PlanPhase ph;
    if (!ParsePhase(phase, &ph)) {
      p->Add(Get(s, "phase"), Sub(spath, "phase"),
             absl::StrCat("unknown phase '", phase,
                          "' (expected audit, protect, require or disable)"));
      continue;
    }
    out->push_back(RemediationStep{info->key, *norm, ph, std::move(platforms)});
  }
}

bool ValidRuleId(absl::string_view id) {
  if (id.empty() || id.size() > 100) return false;
  for (char c : id) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

void ReadRule(const YAML::Node& n, absl::string_view path, const Classification& cls, Rule* r,
              Problems* p) {
  if (!CheckMap(n,
                {"id", "title", "description", "severity", "cis", "appliesTo", "shares", "expect",
                 "sessions", "remediation"},
                path, p)) {
    return;
  }
  if (ReadStr(n, "id", path, &r->id, p, true) && !ValidRuleId(r->id)) {
    p->Add(Get(n, "id"), Sub(path, "id"),
           absl::StrCat("'", r->id, "': expected letters, digits, '-', '_' or '.', at most 100"));
  }
  ReadStr(n, "title", path, &r->title, p, true);
  ReadStr(n, "description", path, &r->description, p);
  std::string sev;
  if (ReadStr(n, "severity", path, &sev, p) && !ParseSeverity(sev, &r->severity)) {
    p->Add(Get(n, "severity"), Sub(path, "severity"),
           absl::StrCat("unknown severity '", sev,
                        "' (expected info, low, medium, high or critical)"));
  }
  YAML::Node cis = Get(n, "cis");
  if (Present(cis) && CheckMap(cis, {"ws2022", "ws2025"}, Sub(path, "cis"), p)) {
    std::string v;
    if (ReadStr(cis, "ws2022", Sub(path, "cis"), &v, p)) r->cis.set_ws2022(v);
    if (ReadStr(cis, "ws2025", Sub(path, "cis"), &v, p)) r->cis.set_ws2025(v);
  }
  YAML::Node applies = Get(n, "appliesTo");
  if (Present(applies)) ReadAppliesTo(applies, Sub(path, "appliesTo"), &r->applies_to, p);

  YAML::Node shares = Get(n, "shares");
  if (Present(shares)) {
    std::string spath = Sub(path, "shares");
    if (CheckMap(shares, {"classifications", "names", "includeSpecial", "compressibility"}, spath,
                 p)) {
      r->share_scoped = true;
      for (const auto& [name, node] : ReadStrList(shares, "classifications", spath, p)) {
        int idx = cls.IndexOf(name);
        if (idx < 0) {
          p->Add(node, Sub(spath, "classifications"),
                 absl::StrCat("unknown classification '", name,
                              "' (expected one of: ", absl::StrJoin(cls.classes, ", "), ")"));
          continue;
        }
        r->share_classes.push_back(idx);
      }
      ReadGlobs(shares, "names", spath, &r->share_names, p);
      ReadBoolKey(shares, "includeSpecial", spath, &r->include_special_shares, p);
      YAML::Node compressibility = Get(shares, "compressibility");
      if (Present(compressibility)) {
        ReadCompressibility(compressibility, Sub(spath, "compressibility"),
                            &r->share_compressibility, p);
      }
    }
  }
  YAML::Node expect = Get(n, "expect");
  if (Present(expect)) ReadExpect(expect, Sub(path, "expect"), r->share_scoped, &r->expect, p);
  YAML::Node sessions = Get(n, "sessions");
  if (Present(sessions)) ReadSessions(sessions, Sub(path, "sessions"), &r->sessions, p);
  if (!Present(expect) && !Present(sessions)) {
    p->Add(n, path, "a rule needs `expect:` and/or `sessions:`");
  }
  YAML::Node rem = Get(n, "remediation");
  if (Present(rem)) {
    ReadRemediation(rem, Sub(path, "remediation"), r->share_scoped, &r->remediation, p);
  }
}

void ReadClassification(const YAML::Node& n, absl::string_view path, Classification* c,
                        Problems* p) {
  if (!CheckMap(n, {"classes", "default", "rules", "overrides"}, path, p)) return;
  std::set<std::string> seen;
  for (const auto& [name, node] : ReadStrList(n, "classes", path, p)) {
    if (!ValidRuleId(name)) {
      p->Add(node, Sub(path, "classes"),
             absl::StrCat("'", name, "': expected letters, digits, '-', '_' or '.'"));
      continue;
    }
    if (!seen.insert(name).second) {
      p->Add(node, Sub(path, "classes"), absl::StrCat("duplicate class '", name, "'"));
      continue;
    }
    c->classes.push_back(name);
  }
  if (c->classes.empty()) {
    p->Add(n, Sub(path, "classes"), "required: a non-empty list of classification names");
    return;
  }
  auto class_of = [&](const YAML::Node& map, absl::string_view key, absl::string_view kpath,
                      int* out) {
    std::string v;
    if (!ReadStr(map, key, kpath, &v, p, true)) return false;
    int idx = c->IndexOf(v);
    if (idx < 0) {
      p->Add(Get(map, key), Sub(kpath, key),
             absl::StrCat("unknown classification '", v,
                          "' (expected one of: ", absl::StrJoin(c->classes, ", "), ")"));
      return false;
    }
    *out = idx;
    return true;
  };
  class_of(n, "default", path, &c->default_class);

  YAML::Node rules = Get(n, "rules");
  if (Present(rules)) {
    std::string rpath = Sub(path, "rules");
    if (!rules.IsSequence()) {
      p->Add(rules, rpath, absl::StrCat("expected a list, got ", Describe(rules)));
    } else {
      for (size_t i = 0; i < rules.size(); ++i) {
        std::string ipath = Index(rpath, i);
        const YAML::Node& r = rules[i];
        if (!CheckMap(r,
                      {"name", "classification", "shareNames", "paths", "hostLabels", "hostnames"},
                      ipath, p)) {
          continue;
        }
        ClassificationRule cr;
        ReadStr(r, "name", ipath, &cr.name, p, true);
        class_of(r, "classification", ipath, &cr.class_index);
        ReadGlobs(r, "shareNames", ipath, &cr.share_names, p);
        ReadGlobs(r, "paths", ipath, &cr.paths, p);
        ReadLabels(r, "hostLabels", ipath, &cr.host_labels, p);
        ReadGlobs(r, "hostnames", ipath, &cr.hostnames, p);
        if (cr.share_names.empty() && cr.paths.empty() && cr.host_labels.empty() &&
            cr.hostnames.empty()) {
          p->Add(r, ipath, "expected at least one of shareNames, paths, hostLabels, hostnames");
        }
        c->rules.push_back(std::move(cr));
      }
    }
  }
  YAML::Node overrides = Get(n, "overrides");
  if (Present(overrides)) {
    std::string opath = Sub(path, "overrides");
    if (!overrides.IsSequence()) {
      p->Add(overrides, opath, absl::StrCat("expected a list, got ", Describe(overrides)));
    } else {
      for (size_t i = 0; i < overrides.size(); ++i) {
        std::string ipath = Index(opath, i);
        const YAML::Node& o = overrides[i];
        if (!CheckMap(o, {"name", "host", "share", "classification"}, ipath, p)) continue;
        std::string host, share, name;
        int idx = 0;
        bool ok = ReadStr(o, "host", ipath, &host, p, true);
        ok = ReadStr(o, "share", ipath, &share, p, true) && ok;
        ok = class_of(o, "classification", ipath, &idx) && ok;
        if (!ReadStr(o, "name", ipath, &name, p)) name = absl::StrCat("override:", i);
        if (!ok) continue;
        auto hg = Glob::Compile(host);
        auto sg = Glob::Compile(share);
        if (!hg.ok()) {
          p->Add(Get(o, "host"), Sub(ipath, "host"),
                 absl::StrCat("bad pattern: ", hg.status().message()));
        }
        if (!sg.ok()) {
          p->Add(Get(o, "share"), Sub(ipath, "share"),
                 absl::StrCat("bad pattern: ", sg.status().message()));
        }
        if (!hg.ok() || !sg.ok()) continue;
        c->overrides.push_back(ClassificationOverride{name, *std::move(hg), *std::move(sg), idx});
      }
    }
  }
}

bool ReadTime(const YAML::Node& map, absl::string_view key, absl::string_view path,
              google::protobuf::Timestamp* out, Problems* p, bool required) {
  std::string v;
  if (!ReadStr(map, key, path, &v, p, required)) return false;
  if (!google::protobuf::util::TimeUtil::FromString(v, out)) {
    p->Add(Get(map, key), Sub(path, key),
           absl::StrCat("expected an RFC 3339 time such as 2027-01-31T00:00:00Z, got '", v, "'"));
    return false;
  }
  return true;
}

void ReadWaivers(const YAML::Node& n, absl::string_view path, std::vector<v1::Waiver>* out,
                 Problems* p) {
  if (!n.IsSequence()) {
    p->Add(n, path, absl::StrCat("expected a list, got ", Describe(n)));
    return;
  }
  for (size_t i = 0; i < n.size(); ++i) {
    std::string ipath = Index(path, i);
    const YAML::Node& w = n[i];
    if (!CheckMap(w,
                  {"id", "rule", "host", "label", "share", "justification", "approvedBy", "expires",
                   "created", "createdBy"},
                  ipath, p)) {
      continue;
    }
    v1::Waiver waiver;
    std::string v;
    if (ReadStr(w, "id", ipath, &v, p, true)) waiver.set_id(v);
    if (ReadStr(w, "rule", ipath, &v, p, true)) waiver.set_rule_id(v);
    if (ReadStr(w, "host", ipath, &v, p)) waiver.set_host(v);
    if (ReadStr(w, "share", ipath, &v, p)) waiver.set_share(v);
    if (ReadStr(w, "label", ipath, &v, p)) {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        p->Add(Get(w, "label"), Sub(ipath, "label"),
               absl::StrCat("expected key=value, got '", v, "'"));
      } else {
        waiver.set_label_key(v.substr(0, eq));
        waiver.set_label_value(v.substr(eq + 1));
      }
    }
    if (ReadStr(w, "justification", ipath, &v, p, true)) waiver.set_justification(v);
    if (ReadStr(w, "approvedBy", ipath, &v, p, true)) waiver.set_approved_by(v);
    if (ReadStr(w, "createdBy", ipath, &v, p)) waiver.set_created_by(v);
    ReadTime(w, "expires", ipath, waiver.mutable_expires_at(), p, true);
    if (Present(Get(w, "created"))) {
      ReadTime(w, "created", ipath, waiver.mutable_created_at(), p, false);
    }
    int scopes = (waiver.host().empty() ? 0 : 1) + (waiver.label_key().empty() ? 0 : 1);
    if (scopes == 0 && waiver.share().empty()) {
      p->Add(w, ipath, "a waiver needs a scope: host, label or share");
    } else if (scopes > 1) {
      p->Add(w, ipath, "host and label are alternatives: give one of them");
    } else if (!waiver.label_key().empty() && !waiver.share().empty()) {
      p->Add(w, ipath, "share narrows a host waiver; it cannot be combined with label");
    }
    out->push_back(std::move(waiver));
  }
}

}  // namespace

int Classification::IndexOf(absl::string_view name) const {
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<Policy> ParsePolicy(const std::string& file, const std::string& text) {
  if (text.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", text.size(), " bytes, limit ", kMaxPolicyBytes));
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": not valid YAML: ", e.msg));
  }
  Problems p(file);
  Policy policy;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": expected a policy (a mapping) at the top level, got ", Describe(root)));
  }
  CheckMap(root,
           {"apiVersion", "name", "version", "description", "classification", "rules", "waivers"},
           "", &p);
  std::string api;
  if (ReadStr(root, "apiVersion", "", &api, &p, true) && api != kPolicyApiVersion) {
    p.Add(Get(root, "apiVersion"), "apiVersion",
          absl::StrCat("unsupported '", api, "' (expected ", kPolicyApiVersion, ")"));
  }
  ReadStr(root, "name", "", &policy.name, &p, true);
  ReadStr(root, "version", "", &policy.version, &p, true);
  ReadStr(root, "description", "", &policy.description, &p);

  YAML::Node cls = Get(root, "classification");
  if (Present(cls)) {
    ReadClassification(cls, "classification", &policy.classification, &p);
  } else {
    policy.classification.classes = {"general"};
  }
  if (policy.classification.classes.empty()) policy.classification.classes = {"general"};

  YAML::Node rules = Get(root, "rules");
  if (!Present(rules) || !rules.IsSequence() || rules.size() == 0) {
    p.Add(Present(rules) ? rules : root, "rules", "required: a non-empty list of rules");
  } else {
    std::set<std::string> ids;
    for (size_t i = 0; i < rules.size(); ++i) {
      Rule r;
      std::string rpath = Index("rules", i);
      ReadRule(rules[i], rpath, policy.classification, &r, &p);
      if (!r.id.empty() && !ids.insert(r.id).second) {
        p.Add(Get(rules[i], "id"), Sub(rpath, "id"),
              absl::StrCat("duplicate rule id '", r.id, "'"));
      }
      policy.rules.push_back(std::move(r));
    }
  }
  YAML::Node waivers = Get(root, "waivers");
  if (Present(waivers)) {
    ReadWaivers(waivers, "waivers", &policy.waivers, &p);
    for (size_t i = 0; i < policy.waivers.size() && waivers.IsSequence(); ++i) {
      const std::string& rule = policy.waivers[i].rule_id();
      bool known = rule == "*" || rule.empty();
      for (const Rule& r : policy.rules) known = known || r.id == rule;
      if (!known) {
        p.Add(waivers[i], Sub(Index("waivers", i), "rule"),
              absl::StrCat("unknown rule '", rule, "' (expected a rule id of this policy or *)"));
      }
    }
  }
  if (!p.empty()) return p.ToStatus();
  return policy;
}

}  // namespace smbfleet::policy
