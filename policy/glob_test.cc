#include "policy/glob.h"

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
  }
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
