#ifndef SMBFLEET_POLICY_POLICY_H_
#define SMBFLEET_POLICY_POLICY_H_

// The policy model: what a policy file (policy/README.md) says once it has been validated.
// ParsePolicy() is strict: every unknown key, wrong type, bad pattern, unknown field or setting
// is reported at once with file and line.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/fields.h"
#include "policy/glob.h"
#include "policy/settings.h"
#include "smbfleet/v1/policy.pb.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

inline constexpr absl::string_view kPolicyApiVersion = "smbfleet/policy/v1";

struct LabelMatch {
  std::string key;
  Glob value;
};

// One alternative of `appliesTo`; every criterion given must hold.
struct HostSelector {
  std::vector<smbfleet::v1::Platform> platforms;  // empty = any platform
  std::optional<uint32_t> windows_build_at_least;
  std::optional<uint32_t> windows_build_below;
  std::vector<LabelMatch> host_labels;
  // exceptHostLabels: the selector does not hold for a host whose labels match all of these
  // (e.g. role: domain-controller, which the posture cannot tell otherwise, or cpu: busy).
  std::vector<LabelMatch> except_host_labels;
  GlobList hostnames;
};

// shares.compressibility: the share's compression ratio (policy/compressibility.h) is at least
// and/or below these bounds; a share whose ratio is unknown is not selected.
struct CompressibilityBounds {
  std::optional<double> at_least;
  std::optional<double> below;
  bool active() const { return at_least.has_value() || below.has_value(); }
  bool Holds(double ratio) const {
    return ratio > 0 && (!at_least || ratio >= *at_least) && (!below || ratio < *below);
  }
};

// kSubsetOf: every entry of a list field is one of `items`; kIncludes: every one of `items` is
// an entry of it. Both compare names without regard to case.
enum class Op : uint8_t { kEquals, kAtLeast, kAtMost, kEmpty, kNotEmpty, kSubsetOf, kIncludes };

struct Expectation {
  Field field;
  Op op;
  uint32_t value = 0;              // bools 0/1, dialect enum numbers, plain numbers
  std::string expected;            // for evidence: "true", ">= SMB_3_1_1", "empty"
  std::vector<std::string> items;  // the names of kSubsetOf and kIncludes
};

// Checks on the live sessions (observed, not configured). min_rtt_us_at_most: the lowest
// round-trip time of the session's TCP connection; a session without one (not measured) is
// left out.
struct SessionCheck {
  std::optional<smbfleet::v1::Dialect> dialect_at_least;
  bool no_guest = false;
  bool no_anonymous = false;
  std::optional<uint32_t> min_rtt_us_at_most;
  bool active() const {
    return dialect_at_least.has_value() || no_guest || no_anonymous ||
           min_rtt_us_at_most.has_value();
  }
};

struct RemediationStep {
  SettingKey setting;
  std::string value;  // normalised (NormalizeSettingValue)
  smbfleet::v1::PlanPhase phase;
  std::vector<smbfleet::v1::Platform> platforms;  // empty = every platform
};

struct Rule {
  std::string id;
  std::string title;
  std::string description;
  smbfleet::v1::Severity severity = smbfleet::v1::SEVERITY_MEDIUM;
  smbfleet::v1::CisReference cis;
  std::vector<HostSelector> applies_to;  // any of them; empty = every host
  // Share rules (share_scoped) yield one result per selected share.
  bool share_scoped = false;
  std::vector<int> share_classes;  // indexes into Classification::classes; empty = any
  GlobList share_names;            // empty = any name
  bool include_special_shares = false;
  CompressibilityBounds share_compressibility;
  std::vector<Expectation> expect;
  SessionCheck sessions;
  std::vector<RemediationStep> remediation;
};

struct ClassificationRule {
  std::string name;
  int class_index = 0;
  GlobList share_names;
  GlobList paths;
  std::vector<LabelMatch> host_labels;
  GlobList hostnames;
};

struct ClassificationOverride {
  std::string name;  // "override:<n>" unless named
  Glob host;
  Glob share;
  int class_index = 0;
};

struct Classification {
  std::vector<std::string> classes;
  int default_class = 0;
  std::vector<ClassificationRule> rules;
  std::vector<ClassificationOverride> overrides;
  int IndexOf(absl::string_view name) const;  // -1 when unknown
};

struct Policy {
  std::string name;
  std::string version;
  std::string description;
  Classification classification;
  std::vector<Rule> rules;
  std::vector<smbfleet::v1::Waiver> waivers;  // waivers written in the policy file
  // A digest of the policy's text, filled by whoever read the file (policy/ does no hashing).
  // The collector keys skipped evaluations on it, so an edited policy takes effect on unchanged
  // hosts even when its author did not change `version`.
  std::string source_digest;
};

// `file` names the input in errors; `text` is the YAML.
absl::StatusOr<Policy> ParsePolicy(const std::string& file, const std::string& text);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_POLICY_H_
