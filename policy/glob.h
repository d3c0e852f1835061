#ifndef SMBFLEET_POLICY_GLOB_H_
#define SMBFLEET_POLICY_GLOB_H_

// Case-insensitive shell-style patterns for share names, paths, host names and label values:
// `*` any run, `?` one character, `[abc]`, `[a-z]`, `[!x]` a set. Nothing else is special, so a
// Windows path pattern such as "*\backup\*" means what it says.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smbfleet::policy {

// The characters a text holds, as a set of 64 (bit c & 63). A pattern whose literal characters
// are not all in a text cannot match it: one AND rules most patterns out, before any matching.
uint64_t CharSet(absl::string_view text);
inline uint64_t CharBit(char c) { return uint64_t{1} << (static_cast<unsigned char>(c) & 63); }

class Glob {
 public:
  // InvalidArgument naming what is wrong (empty pattern, unterminated or empty set).
  static absl::StatusOr<Glob> Compile(absl::string_view pattern);

  bool Matches(absl::string_view text) const;
  // Same, for text that is already ASCII-lowercased (cheaper when one text meets many globs).
  bool MatchesLowered(absl::string_view lowered_text) const;
  // Same, with CharSet(lowered_text) computed once for every pattern.
  bool MatchesLowered(absl::string_view lowered_text, uint64_t chars) const {
    return (chars & required_) == required_ && MatchesLowered(lowered_text);
  }
  const std::string& pattern() const { return pattern_; }

 private:
  // Most patterns are "name", "prefix*", "*suffix" or "*part*": matched without backtracking.
  enum class Shape { kLiteral, kPrefix, kSuffix, kContains, kGeneral };

  Glob(std::string pattern, std::string lowered, Shape shape, std::string core, uint64_t required)
      : pattern_(std::move(pattern)),
        lowered_(std::move(lowered)),
        shape_(shape),
        core_(std::move(core)),
        required_(required) {}

  std::string pattern_;  // as written
  std::string lowered_;  // ASCII-lowercased
  Shape shape_;
  std::string core_;   // the literal part for the simple shapes
  uint64_t required_;  // CharSet of the literal characters outside sets
};

// Matches when any of its patterns matches; an empty list matches nothing.
class GlobList {
 public:
  void Add(Glob g) { globs_.push_back(std::move(g)); }
  bool Matches(absl::string_view text) const;
  bool MatchesLowered(absl::string_view lowered_text) const;
  bool MatchesLowered(absl::string_view lowered_text, uint64_t chars) const {
    for (const Glob& g : globs_) {
      if (g.MatchesLowered(lowered_text, chars)) return true;
    }
    return false;
  }
  bool empty() const { return globs_.empty(); }
  const std::vector<Glob>& globs() const { return globs_; }

 private:
  std::vector<Glob> globs_;
};

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_GLOB_H_
