#include "policy/glob.h"

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"

namespace smbfleet::policy {
namespace {

struct Case {
  const char* pattern;
  const char* text;
  bool match;
};

TEST(GlobTest, MatchesTable) {
  const Case cases[] = {
      {"HR", "hr", true},
      {"HR", "HR2", false},
      {"backup*", "Backup-2024", true},
      {"backup*", "mybackup", false},
      {"*bak", "DATA.BAK", true},
      {"*bak", "bakery", false},
      {"*pii*", "team-PII-data", true},
      {"*pii*", "pi", false},
      {"*\\backup\\*", "D:\\Data\\Backup\\weekly", true},
      {"*\\backup\\*", "D:\\Data\\Backups", false},
      {"fs??", "fs01", true},
      {"fs??", "fs001", false},
      {"fs[0-9]*", "FS7-east", true},
      {"fs[!0-9]*", "fs7", false},
      {"fs[!0-9]*", "fsx", true},
      {"a*b*c", "aXXbYYc", true},
      {"a*b*c", "aXXbYY", false},
      {"*", "", true},
      {"*", "anything", true},
      {"[]]x", "]x", true},
  };
  for (const Case& c : cases) {
    auto g = Glob::Compile(c.pattern);
    ASSERT_TRUE(g.ok()) << c.pattern << ": " << g.status();
    EXPECT_EQ(g->Matches(c.text), c.match) << c.pattern << " vs " << c.text;
    // The character-set prefilter never changes the answer.
    std::string lowered = absl::AsciiStrToLower(c.text);
    EXPECT_EQ(g->MatchesLowered(lowered, CharSet(lowered)), c.match)
        << c.pattern << " vs " << c.text << " (with CharSet)";
  }
}

TEST(GlobTest, CharSetRulesOutPatternsWhoseLettersAreMissing) {
  auto g = Glob::Compile("*confidential*");
  ASSERT_TRUE(g.ok());
  // "finance" lacks letters of "confidential" (o, d, t, l): ruled out by the set alone.
  EXPECT_FALSE(g->MatchesLowered("finance", CharSet("finance")));
  EXPECT_TRUE(g->MatchesLowered("x-confidential-y", CharSet("x-confidential-y")));
  // A set of characters ([0-9]) adds nothing to what the text must contain.
  auto s = Glob::Compile("fs[0-9]");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->MatchesLowered("fs7", CharSet("fs7")));
  // A character missing from the given set rules the text out even where the matcher would
  // accept it: the set is trusted to be the text's.
  EXPECT_FALSE(s->MatchesLowered("fs7", CharSet("s7")));
}

TEST(GlobTest, RejectsBadPatterns) {
  for (const char* bad : {"", "fs[0-9", "[", "a[!"}) {
    auto g = Glob::Compile(bad);
    EXPECT_FALSE(g.ok()) << bad;
  }
  auto g = Glob::Compile("fs[0-9");
  EXPECT_NE(g.status().message().find("no closing ']'"), std::string::npos) << g.status();
}

TEST(GlobTest, ListMatchesAny) {
  GlobList list;
  EXPECT_FALSE(list.Matches("x"));
  list.Add(*Glob::Compile("a*"));
  list.Add(*Glob::Compile("*z"));
  EXPECT_TRUE(list.Matches("abc"));
  EXPECT_TRUE(list.Matches("xyz"));
  EXPECT_FALSE(list.Matches("xyy"));
}

}  // namespace
}  // namespace smbfleet::policy
