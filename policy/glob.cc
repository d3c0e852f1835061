#include "policy/glob.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace smbfleet::policy {
namespace {

// Matches the set starting at p[i] == '[' against c; sets *next to the index after ']'.
bool MatchSet(absl::string_view p, size_t i, char c, size_t* next) {
  size_t j = i + 1;
  bool negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  bool hit = false;
  bool first = true;
  while (j < p.size() && (p[j] != ']' || first)) {
    first = false;
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      if (c >= p[j] && c <= p[j + 2]) hit = true;
      j += 3;
    } else {
      if (c == p[j]) hit = true;
      ++j;
    }
  }
  *next = j + 1;  // Compile() guarantees the closing bracket
  return hit != negate;
}

}  // namespace

uint64_t CharSet(absl::string_view text) {
  uint64_t set = 0;
  for (char c : text) set |= CharBit(c);
  return set;
}

absl::StatusOr<Glob> Glob::Compile(absl::string_view pattern) {
  if (pattern.empty()) {
    return absl::InvalidArgumentError("empty pattern (use \"*\" to match everything)");
  }
  if (pattern.size() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern of ", pattern.size(), " characters, limit 1024"));
  }
  bool literal = true;
  uint64_t required = 0;  // CharSet of the characters every match contains
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '*' || c == '?') literal = false;
    if (c != '*' && c != '?' && c != '[') required |= CharBit(absl::ascii_tolower(c));
    if (c == '[') {
      literal = false;
      size_t j = i + 1;
      if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;  // "]" first is a member
      while (j < pattern.size() && pattern[j] != ']') ++j;
      if (j >= pattern.size()) {
        return absl::InvalidArgumentError(absl::StrCat("pattern '", pattern, "': '[' at position ",
                                                       i + 1, " has no closing ']'"));
      }
      i = j;
    }
  }
  std::string lowered = absl::AsciiStrToLower(pattern);
  Shape shape = Shape::kGeneral;
  std::string core;
  if (literal) {
    shape = Shape::kLiteral;
    core = lowered;
  } else {
    absl::string_view inner = lowered;
    bool lead = absl::ConsumePrefix(&inner, "*");
    bool trail = absl::ConsumeSuffix(&inner, "*");
    bool plain = !inner.empty() && inner.find_first_of("*?[") == absl::string_view::npos;
    if (plain) {
      core = std::string(inner);
      shape = lead && trail ? Shape::kContains : lead ? Shape::kSuffix : Shape::kPrefix;
    }
  }
  return Glob(std::string(pattern), std::move(lowered), shape, std::move(core), required);
}

bool Glob::Matches(absl::string_view text) const {
  if (shape_ == Shape::kLiteral) return absl::EqualsIgnoreCase(text, core_);
  thread_local std::string lowered;
  lowered.assign(text.data(), text.size());
  absl::AsciiStrToLower(&lowered);
  return MatchesLowered(lowered);
}

bool Glob::MatchesLowered(absl::string_view text) const {
  // The simple shapes compare one character before calling memcmp (most texts miss
  // there); 'contains' finds candidate starts with memchr.
  const size_t n = core_.size();
  switch (shape_) {
    case Shape::kLiteral:
      return text.size() == n && text[0] == core_[0] && text == core_;
    case Shape::kPrefix:
      return text.size() >= n && text[0] == core_[0] &&
             std::memcmp(text.data(), core_.data(), n) == 0;
    case Shape::kSuffix:
      return text.size() >= n && text[text.size() - 1] == core_[n - 1] &&
             std::memcmp(text.data() + text.size() - n, core_.data(), n) == 0;
    case Shape::kContains: {
      if (text.size() < n) return false;
      const char* t = text.data();
      const char* last = text.data() + (text.size() - n);  // the last possible start
      while (t <= last) {
        t = static_cast<const char*>(std::memchr(t, core_[0], static_cast<size_t>(last - t) + 1));
        if (t == nullptr) return false;
        if (std::memcmp(t + 1, core_.data() + 1, n - 1) == 0) return true;
        ++t;
      }
      return false;
    }
    case Shape::kGeneral:
      break;
  }
  absl::string_view p = lowered_;
  size_t pi = 0, ti = 0;
  size_t star_p = absl::string_view::npos, star_t = 0;
  while (ti < text.size()) {
    char c = text[ti];
    if (pi < p.size()) {
      char pc = p[pi];
      if (pc == '*') {
        star_p = pi++;
        star_t = ti;
        continue;
      }
      if (pc == '?') {
        ++pi;
        ++ti;
        continue;
      }
      if (pc == '[') {
        size_t next = 0;
        if (MatchSet(p, pi, c, &next)) {
          pi = next;
          ++ti;
          continue;
        }
      } else if (pc == c) {
        ++pi;
        ++ti;
        continue;
      }
    }
    if (star_p == absl::string_view::npos) return false;
    pi = star_p + 1;
    ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool GlobList::Matches(absl::string_view text) const {
  if (globs_.empty()) return false;
  thread_local std::string lowered;
  lowered.assign(text.data(), text.size());
  absl::AsciiStrToLower(&lowered);
  return MatchesLowered(lowered);
}

bool GlobList::MatchesLowered(absl::string_view text) const {
  for (const Glob& g : globs_) {
    if (g.MatchesLowered(text)) return true;
  }
  return false;
}

}  // namespace smbfleet::policy
