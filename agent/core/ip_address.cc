#include "agent/core/ip_address.h"

#include <cstdio>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace smbfleet::agent {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool IsMapped(const IpBytes& a) {
  for (size_t i = 0; i < sizeof(kMappedPrefix); ++i) {
    if (a[i] != kMappedPrefix[i]) return false;
  }
  return true;
}

// Dotted quad into out[0..3]: four decimal parts of 1-3 digits, each at most 255.
bool ParseIpv4(absl::string_view text, uint8_t* out) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  if (parts.size() != 4) return false;
  for (size_t i = 0; i < 4; ++i) {
    uint32_t n = 0;
    if (parts[i].empty() || parts[i].size() > 3) return false;
    for (char c : parts[i]) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    }
    if (!absl::SimpleAtoi(parts[i], &n) || n > 255) return false;
    out[i] = static_cast<uint8_t>(n);
  }
  return true;
}

// Colon-separated hex groups (the last may be a dotted quad) into 16-bit words.
bool ParseGroups(absl::string_view text, std::vector<uint16_t>* words) {
  if (text.empty()) return true;
  std::vector<absl::string_view> groups = absl::StrSplit(text, ':');
  for (size_t i = 0; i < groups.size(); ++i) {
    absl::string_view g = groups[i];
    if (i + 1 == groups.size() && g.find('.') != absl::string_view::npos) {
      uint8_t v4[4];
      if (!ParseIpv4(g, v4)) return false;
      words->push_back(static_cast<uint16_t>((v4[0] << 8) | v4[1]));
      words->push_back(static_cast<uint16_t>((v4[2] << 8) | v4[3]));
      continue;
    }
    if (g.empty() || g.size() > 4) return false;
    uint32_t w = 0;
    for (char c : g) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
    }
    if (!absl::SimpleHexAtoi(g, &w)) return false;
    words->push_back(static_cast<uint16_t>(w));
  }
  return true;
}

std::optional<IpBytes> ParseIpv6(absl::string_view text) {
  std::vector<uint16_t> head, tail;
  size_t gap = text.find("::");
  if (gap == absl::string_view::npos) {
    if (!ParseGroups(text, &head) || head.size() != 8) return std::nullopt;
  } else {
    if (text.find("::", gap + 1) != absl::string_view::npos) return std::nullopt;
    if (!ParseGroups(text.substr(0, gap), &head) || !ParseGroups(text.substr(gap + 2), &tail)) {
      return std::nullopt;
    }
    if (head.size() + tail.size() > 7) return std::nullopt;
  }
  std::vector<uint16_t> words = head;
  words.resize(8 - tail.size(), 0);
  words.insert(words.end(), tail.begin(), tail.end());
  IpBytes out{};
  for (size_t i = 0; i < 8; ++i) {
    out[2 * i] = static_cast<uint8_t>(words[i] >> 8);
    out[2 * i + 1] = static_cast<uint8_t>(words[i] & 0xff);
  }
  return out;
}

}  // namespace

std::optional<IpBytes> ParseIpAddress(absl::string_view text) {
  IpBytes out{};
  if (ParseIpv4(text, out.data() + 12)) {
    for (size_t i = 0; i < sizeof(kMappedPrefix); ++i) out[i] = kMappedPrefix[i];
    return out;
  }
  if (text.find(':') == absl::string_view::npos) return std::nullopt;
  size_t zone = text.find('%');
  if (zone != absl::string_view::npos) {
    if (zone + 1 == text.size()) return std::nullopt;
    text = text.substr(0, zone);
  }
  return ParseIpv6(text);
}

std::string FormatIpAddress(const IpBytes& a) {
  char buf[64];
  if (IsMapped(a)) {
    std::snprintf(buf, sizeof(buf), "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
    return buf;
  }
  uint16_t words[8];
  for (size_t i = 0; i < 8; ++i) words[i] = static_cast<uint16_t>((a[2 * i] << 8) | a[2 * i + 1]);
  // The first longest run of at least two zero words becomes "::" (RFC 5952, 4.2).
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (words[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && words[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_len < 2) best = -1;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    std::snprintf(buf, sizeof(buf), "%x", words[i]);
    out += buf;
  }
  return out;
}

std::string CanonicalIpAddress(absl::string_view text) {
  std::optional<IpBytes> parsed = ParseIpAddress(text);
  return parsed.has_value() ? FormatIpAddress(*parsed) : std::string(text);
}

}  // namespace smbfleet::agent
