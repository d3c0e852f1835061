#include "common/safe_text.h"

#include <string>

#include "gtest/gtest.h"

namespace smbfleet {
namespace {

struct Case {
  std::string in, out;
};

TEST(SafeTextTest, EscapesWhatCouldDriveATerminalAndKeepsOtherText) {
  const Case cases[] = {
      {"Z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x93\x81",
       "Z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x93\x81"},
      {"a\tb\x7f\r\n", "a\\x09b\\x7f\\x0d\\x0a"},
      {"\xc2\x9b"
       "31m",
       "\\xc2\\x9b31m"},                               // C1 CSI
      {"\xc2\x85", "\\xc2\\x85"},                      // C1 next line
      {"\xc2\xa0", "\xc2\xa0"},                        // no-break space is text
      {"a\xe2\x80\xaez", "a\\u202ez"},                 // right-to-left override
      {"x\xe2\x81\xa7y", "x\\u2067y"},                 // first strong isolate
      {"\xe2\x80\x8e\xe2\x80\x8f", "\\u200e\\u200f"},  // LRM, RLM
      {"\xd8\x9c", "\\u061c"},                         // Arabic letter mark
      {"\xff\xc3", "\\xff\\xc3"},                      // not UTF-8, truncated sequence
      {"\xc0\x8a", "\\xc0\\x8a"},                      // overlong newline
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},             // a surrogate
      {"say \"hi\" \\", "say \"hi\" \\"},              // quotes mean nothing on a terminal
  };
  for (const Case& c : cases) EXPECT_EQ(EscapeUnsafeText(c.in), c.out) << c.in;
}

TEST(SafeTextTest, IsUtf8RefusesWhatPostgresRefuses) {
  EXPECT_TRUE(IsUtf8(""));
  EXPECT_TRUE(IsUtf8("Z\xc3\xbcrich \xe2\x82\xac \xf0\x9f\x93\x81"));
  EXPECT_TRUE(IsUtf8(std::string("a\0b", 3)));  // U+0000 is UTF-8; validation refuses it apart
  EXPECT_FALSE(IsUtf8("\xff"));
  EXPECT_FALSE(IsUtf8("ab\xc3"));            // truncated
  EXPECT_FALSE(IsUtf8("\xc0\x8a"));          // overlong
  EXPECT_FALSE(IsUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
}

TEST(SafeTextTest, Utf8PrefixNeverEndsInsideACharacter) {
  EXPECT_EQ(Utf8Prefix("abc", 5), "abc");
  EXPECT_EQ(Utf8Prefix("ab\xc3\xbc", 3), "ab");
  EXPECT_EQ(Utf8Prefix("ab\xc3\xbc", 4), "ab\xc3\xbc");
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x93\x81z", 3), "");
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x93\x81z", 4), "\xf0\x9f\x93\x81");
}

TEST(SafeTextTest, QuotedFieldEscapesItsQuotesAndIsCutOnACharacter) {
  EXPECT_EQ(QuoteUnsafeText("fs01", 10), "\"fs01\"");
  EXPECT_EQ(QuoteUnsafeText("a\"b\\c\nd", 64), "\"a\\\"b\\\\c\\x0ad\"");
  EXPECT_EQ(QuoteUnsafeText("abcdef", 4), "\"abcd\"...(2 more bytes)");
  // "\xc3\xbc" straddles the cut: it is left out whole, not shown as a broken byte.
  EXPECT_EQ(QuoteUnsafeText("ab\xc3\xbc", 3), "\"ab\"...(2 more bytes)");
  EXPECT_EQ(QuoteUnsafeText("", 4), "\"\"");
}

}  // namespace
}  // namespace smbfleet
