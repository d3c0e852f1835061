#include "common/yaml_config.h"

#include <cctype>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "common/tls_files.h"

namespace smbfleet {
namespace {

std::string Quoted(const YAML::Node& n) {
  if (n.IsScalar()) return absl::StrCat("'", n.Scalar(), "'");
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

}  // namespace

void ConfigProblems::Add(const YAML::Node& at, absl::string_view key_path,
                         absl::string_view problem) {
  YAML::Mark mark = at.Mark();
  if (mark.line >= 0) {
    problems_.push_back(absl::StrCat(file_, ":", mark.line + 1, ": ", key_path, ": ", problem));
  } else {
    AddNoLine(key_path, problem);
  }
}

void ConfigProblems::AddNoLine(absl::string_view key_path, absl::string_view problem) {
  problems_.push_back(absl::StrCat(file_, ": ", key_path, ": ", problem));
}

absl::Status ConfigProblems::ToStatus() const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(problems_.size(), problems_.size() == 1 ? " problem" : " problems",
                   " in configuration:\n  ", absl::StrJoin(problems_, "\n  ")));
}

absl::StatusOr<YAML::Node> ParseYaml(const std::string& file, const std::string& text) {
  try {
    YAML::Node root = YAML::Load(text);
    if (root.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": expected a mapping of settings at the top level, got ", Quoted(root)));
    }
    return root;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
}

std::string JoinPath(absl::string_view prefix, absl::string_view key) {
  if (prefix.empty()) return std::string(key);
  return absl::StrCat(prefix, ".", key);
}

void CheckKeys(const YAML::Node& map, std::initializer_list<absl::string_view> allowed,
               absl::string_view prefix, ConfigProblems* problems) {
  if (!map.IsMap()) return;
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>("");
    bool known = false;
    for (absl::string_view a : allowed) {
      if (a == key) known = true;
    }
    if (!known) {
      problems->Add(
          kv.first, JoinPath(prefix, key),
          absl::StrCat("unknown setting (expected one of: ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
}

bool IsSection(const YAML::Node& node, absl::string_view name, ConfigProblems* problems) {
  if (!node.IsDefined() || node.IsNull()) return false;
  if (node.IsMap()) return true;
  problems->Add(node, name, absl::StrCat("expected a mapping, got ", Quoted(node)));
  return false;
}

bool ReadString(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                std::string* out, ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!n.IsScalar()) {
    problems->Add(n, JoinPath(prefix, key), absl::StrCat("expected a string, got ", Quoted(n)));
    return false;
  }
  *out = n.Scalar();
  return true;
}

bool ReadBool(const YAML::Node& map, absl::string_view key, absl::string_view prefix, bool* out,
              ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  std::string v = n.IsScalar() ? absl::AsciiStrToLower(n.Scalar()) : "";
  if (v == "true" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "false" || v == "no" || v == "off") {
    *out = false;
    return true;
  }
  problems->Add(n, JoinPath(prefix, key), absl::StrCat("expected true or false, got ", Quoted(n)));
  return false;
}

bool ReadUint(const YAML::Node& map, absl::string_view key, absl::string_view prefix, uint64_t min,
              uint64_t max, uint64_t* out, ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  uint64_t v = 0;
  if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v)) {
    problems->Add(n, JoinPath(prefix, key),
                  absl::StrCat("expected a whole number, got ", Quoted(n)));
    return false;
  }
  if (v < min || v > max) {
    problems->Add(n, JoinPath(prefix, key),
                  absl::StrCat(v, " is out of range [", min, ", ", max, "]"));
    return false;
  }
  *out = v;
  return true;
}

absl::StatusOr<std::chrono::milliseconds> ParseDuration(absl::string_view text) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) != 0)) ++i;
  uint64_t n = 0;
  if (i == 0 || !absl::SimpleAtoi(t.substr(0, i), &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a duration such as 90s, 10m, 1h or 1d, got '", text, "'"));
  }
  std::string unit = t.substr(i);
  uint64_t ms_per_unit = 0;
  if (unit == "ms")
    ms_per_unit = 1;
  else if (unit == "s")
    ms_per_unit = 1000;
  else if (unit == "m")
    ms_per_unit = 60'000;
  else if (unit == "h")
    ms_per_unit = 3'600'000;
  else if (unit == "d")
    ms_per_unit = 86'400'000;
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown duration unit in '", text, "' (use ms, s, m, h or d)"));
  }
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ms_per_unit) {
    return absl::InvalidArgumentError(absl::StrCat("duration '", text, "' is too long"));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(n * ms_per_unit));
}

bool ReadDuration(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                  std::chrono::milliseconds* out, ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!n.IsScalar()) {
    problems->Add(n, JoinPath(prefix, key), absl::StrCat("expected a duration, got ", Quoted(n)));
    return false;
  }
  auto d = ParseDuration(n.Scalar());
  if (!d.ok()) {
    problems->Add(n, JoinPath(prefix, key), d.status().message());
    return false;
  }
  *out = *d;
  return true;
}

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  std::string t = std::string(absl::StripAsciiWhitespace(text));
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) != 0)) ++i;
  uint64_t n = 0;
  if (i == 0 || !absl::SimpleAtoi(t.substr(0, i), &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a size such as 4MiB, 512KiB or 1048576, got '", text, "'"));
  }
  std::string unit = t.substr(i);
  uint64_t mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KiB")
    mult = 1ull << 10;
  else if (unit == "MiB")
    mult = 1ull << 20;
  else if (unit == "GiB")
    mult = 1ull << 30;
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown size unit in '", text, "' (use B, KiB, MiB or GiB)"));
  }
  if (n > std::numeric_limits<uint64_t>::max() / mult) {
    return absl::InvalidArgumentError(absl::StrCat("size '", text, "' is too large"));
  }
  return n * mult;
}

bool ReadByteSize(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                  uint64_t* out, ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!n.IsScalar()) {
    problems->Add(n, JoinPath(prefix, key), absl::StrCat("expected a size, got ", Quoted(n)));
    return false;
  }
  auto v = ParseByteSize(n.Scalar());
  if (!v.ok()) {
    problems->Add(n, JoinPath(prefix, key), v.status().message());
    return false;
  }
  *out = *v;
  return true;
}

bool ReadStringMap(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                   std::vector<std::pair<std::string, std::string>>* out,
                   ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!n.IsMap()) {
    problems->Add(n, JoinPath(prefix, key),
                  absl::StrCat("expected a mapping of names to values, got ", Quoted(n)));
    return false;
  }
  bool ok = true;
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>("");
    if (!kv.second.IsScalar()) {
      problems->Add(kv.second, JoinPath(JoinPath(prefix, key), k),
                    absl::StrCat("expected a string, got ", Quoted(kv.second)));
      ok = false;
      continue;
    }
    out->emplace_back(k, kv.second.Scalar());
  }
  return ok;
}

bool ReadStringList(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                    std::vector<std::string>* out, ConfigProblems* problems) {
  YAML::Node n = map[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!n.IsSequence()) {
    problems->Add(n, JoinPath(prefix, key), absl::StrCat("expected a list, got ", Quoted(n)));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      problems->Add(n[i], absl::StrCat(JoinPath(prefix, key), "[", i, "]"),
                    absl::StrCat("expected a string, got ", Quoted(n[i])));
      ok = false;
      continue;
    }
    out->push_back(n[i].Scalar());
  }
  return ok;
}

void ReadTlsSection(const YAML::Node& root, const std::string& config_file,
                    absl::string_view ca_key, TlsFiles* out, ConfigProblems* problems) {
  YAML::Node tls = root["tls"];
  if (!tls.IsDefined()) {
    problems->AddNoLine("tls",
                        absl::StrCat("required: cert, key and ", ca_key, " files for mutual TLS"));
    return;
  }
  if (!tls.IsMap()) {
    problems->Add(tls, "tls", absl::StrCat("expected a mapping with cert, key and ", ca_key));
    return;
  }
  CheckKeys(tls, {"cert", "key", ca_key}, "tls", problems);
  const std::pair<absl::string_view, std::string*> files[] = {
      {"cert", &out->cert}, {"key", &out->key}, {ca_key, &out->ca}};
  for (const auto& [key, value] : files) {
    if (!ReadString(tls, key, "tls", value, problems)) {
      if (!tls[std::string(key)].IsDefined()) problems->Add(tls, JoinPath("tls", key), "required");
      continue;
    }
    *value = ResolvePath(config_file, *value);
    if (!FileExists(*value)) {
      problems->Add(tls[std::string(key)], JoinPath("tls", key),
                    absl::StrCat("file not found: ", *value));
    }
  }
}

void ReadLogLevel(const YAML::Node& root, std::string* out, ConfigProblems* problems) {
  if (!ReadString(root, "log_level", "", out, problems)) return;
  static constexpr absl::string_view kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (absl::string_view l : kLevels) {
    if (*out == l) return;
  }
  problems->Add(root["log_level"], "log_level",
                absl::StrCat("expected trace, debug, info, warn, error or off, got '", *out, "'"));
}

std::string ResolvePath(const std::string& config_file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
#ifdef _WIN32
  // Absolute on Windows too: "\\server\share\x", "\x" and "C:\x" or "C:/x".
  if (path[0] == '\\' || (path.size() >= 2 && path[1] == ':')) return path;
  size_t slash = config_file.find_last_of("/\\");
#else
  size_t slash = config_file.rfind('/');
#endif
  if (slash == std::string::npos) return path;
  return absl::StrCat(config_file.substr(0, slash + 1), path);
}

}  // namespace smbfleet
