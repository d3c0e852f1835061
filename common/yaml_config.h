#ifndef SMBFLEET_COMMON_YAML_CONFIG_H_
#define SMBFLEET_COMMON_YAML_CONFIG_H_

// Helpers for typed configuration files in YAML. A loader walks the document once and records
// every problem (unknown key, wrong type, bad value) with file and line, so that a person fixes
// the whole file in one go instead of one error per run.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/tls_files.h"
#include "yaml-cpp/yaml.h"

namespace smbfleet {

class ConfigProblems {
 public:
  explicit ConfigProblems(std::string file) : file_(std::move(file)) {}

  // `at` gives the line; `key_path` is the dotted path of the setting, e.g. "tls.cert".
  void Add(const YAML::Node& at, absl::string_view key_path, absl::string_view problem);
  void AddNoLine(absl::string_view key_path, absl::string_view problem);

  bool empty() const { return problems_.empty(); }
  const std::vector<std::string>& problems() const { return problems_; }
  const std::string& file() const { return file_; }

  // InvalidArgument listing every problem, one per line; OK when there are none.
  absl::Status ToStatus() const;

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

// Parses YAML text; a syntax error is reported with file and line.
absl::StatusOr<YAML::Node> ParseYaml(const std::string& file, const std::string& text);

// Reports keys of `map` that are not in `allowed`. `prefix` is the dotted path of `map`.
void CheckKeys(const YAML::Node& map, std::initializer_list<absl::string_view> allowed,
               absl::string_view prefix, ConfigProblems* problems);

std::string JoinPath(absl::string_view prefix, absl::string_view key);

// A section such as `limits:`: true when it is a mapping to read. Absent or empty counts as
// absent (false, no problem); anything else is a problem naming the section (yaml-cpp throws
// when a scalar's keys are read, so callers read keys only after this says true).
bool IsSection(const YAML::Node& node, absl::string_view name, ConfigProblems* problems);

// Each reader leaves *out alone when the key is absent and records a problem when the value
// is of the wrong type. They return true when a value was read.
bool ReadString(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                std::string* out, ConfigProblems* problems);
bool ReadBool(const YAML::Node& map, absl::string_view key, absl::string_view prefix, bool* out,
              ConfigProblems* problems);
bool ReadUint(const YAML::Node& map, absl::string_view key, absl::string_view prefix, uint64_t min,
              uint64_t max, uint64_t* out, ConfigProblems* problems);
// Durations as "90s", "10m", "1h", "1d" or "250ms".
bool ReadDuration(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                  std::chrono::milliseconds* out, ConfigProblems* problems);
bool ReadStringMap(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                   std::vector<std::pair<std::string, std::string>>* out, ConfigProblems* problems);
bool ReadStringList(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                    std::vector<std::string>* out, ConfigProblems* problems);

absl::StatusOr<std::chrono::milliseconds> ParseDuration(absl::string_view text);

// Sizes as "4MiB", "512KiB", "1048576".
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);
bool ReadByteSize(const YAML::Node& map, absl::string_view key, absl::string_view prefix,
                  uint64_t* out, ConfigProblems* problems);

// Reads the mandatory `tls` section: three existing files (cert, key and the CA under ca_key),
// resolved against the config file's directory.
void ReadTlsSection(const YAML::Node& root, const std::string& config_file,
                    absl::string_view ca_key, TlsFiles* out, ConfigProblems* problems);

// log_level: trace, debug, info, warn, error or off.
void ReadLogLevel(const YAML::Node& root, std::string* out, ConfigProblems* problems);

// Resolves a path in a config file against the directory of that file (Windows: either
// separator, and a drive letter makes a path absolute).
std::string ResolvePath(const std::string& config_file, const std::string& path);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_YAML_CONFIG_H_
