#ifndef SMBFLEET_COMMON_SAFE_TEXT_H_
#define SMBFLEET_COMMON_SAFE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace smbfleet {

// Text a host or a person supplied, made safe to print on a terminal: control characters (C0,
// DEL, C1 such as U+009B CSI) and bytes that are not UTF-8 as \xNN, bidirectional controls
// (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) as \uNNNN; other UTF-8 is kept.
std::string EscapeUnsafeText(absl::string_view s);

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF),
// as PostgreSQL's UTF8 encoding requires.
bool IsUtf8(absl::string_view s);

// The longest prefix of s of at most max_bytes that does not end inside a UTF-8 sequence: a cut
// string stays valid UTF-8 (a proto3 string that is not would fail to parse at the receiver).
absl::string_view Utf8Prefix(absl::string_view s, size_t max_bytes);

// The same as one double-quoted field whose end the reader can trust: " and \ escaped too, and
// the text cut after max_bytes (on a character boundary) with the number of bytes left out.
std::string QuoteUnsafeText(absl::string_view s, size_t max_bytes);

}  // namespace smbfleet

#endif  // SMBFLEET_COMMON_SAFE_TEXT_H_
