#include "common/safe_text.h"

#include "absl/strings/str_cat.h"

namespace smbfleet {
namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0 (overlong, surrogate, truncated, or
// beyond U+10FFFF).
size_t Utf8Length(absl::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t len = c >= 0xc2 && c < 0xe0   ? 2
               : c >= 0xe0 && c < 0xf0 ? 3
               : c >= 0xf0 && c < 0xf5 ? 4
                                       : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
  }
  if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0) || (c == 0xf0 && b(1) < 0x90) ||
      (c == 0xf4 && b(1) >= 0x90)) {
    return 0;
  }
  return len;
}

uint32_t CodePoint(absl::string_view s, size_t i, size_t len) {
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  if (len == 2) return ((b(0) & 0x1f) << 6) | (b(1) & 0x3f);
  if (len == 3) return ((b(0) & 0x0f) << 12) | ((b(1) & 0x3f) << 6) | (b(2) & 0x3f);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3f) << 12) | ((b(2) & 0x3f) << 6) | (b(3) & 0x3f);
}

// Bidirectional marks, embeddings, overrides and isolates reorder what a reader sees.
bool IsBidiControl(uint32_t cp) {
  return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void AppendEscaped(absl::string_view s, bool quoted, std::string* out) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        absl::StrAppend(out, "\\x", absl::Hex(c, absl::kZeroPad2));
      } else if (quoted && (c == '"' || c == '\\')) {
        out->push_back('\\');
        out->push_back(static_cast<char>(c));
      } else {
        out->push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = Utf8Length(s, i);
    uint32_t cp = len > 0 ? CodePoint(s, i, len) : 0;
    if (len == 0 || (cp >= 0x80 && cp < 0xa0)) {
      // Byte by byte: a C1 control shows as its two UTF-8 bytes, as it would in a hex dump.
      absl::StrAppend(out, "\\x", absl::Hex(c, absl::kZeroPad2));
      ++i;
      continue;
    }
    if (IsBidiControl(cp)) {
      absl::StrAppend(out, "\\u", absl::Hex(cp, absl::kZeroPad4));
    } else {
      out->append(s.data() + i, len);
    }
    i += len;
  }
}

}  // namespace

std::string EscapeUnsafeText(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendEscaped(s, /*quoted=*/false, &out);
  return out;
}

bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8Length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

absl::string_view Utf8Prefix(absl::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t keep = max_bytes;
  // Back off to the start of the character the cut falls in.
  while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xc0) == 0x80) --keep;
  return s.substr(0, keep);
}

std::string QuoteUnsafeText(absl::string_view s, size_t max_bytes) {
  const size_t keep = Utf8Prefix(s, max_bytes).size();
  std::string out = "\"";
  out.reserve(keep + 2);
  AppendEscaped(s.substr(0, keep), /*quoted=*/true, &out);
  out.push_back('"');
  if (keep < s.size()) absl::StrAppend(&out, "...(", s.size() - keep, " more bytes)");
  return out;
}

}  // namespace smbfleet
