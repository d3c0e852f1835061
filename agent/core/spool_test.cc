#include "agent/core/spool.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

smbfleet::v1::ReportRequest Report(const std::string& id) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  r.mutable_posture()->mutable_host()->set_hostname("fs01");
  return r;
}

std::string TempDir() {
  char tmpl[] = "/tmp/smbfleet-spool-XXXXXX";
  return ::mkdtemp(tmpl);
}

TEST(SpoolTest, KeepsOrderAcrossRestarts) {
  std::string dir = TempDir() + "/spool";
  {
    Spool spool(dir, 10);
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_TRUE(spool.Put(Report("b-1")).ok());
    ASSERT_TRUE(spool.Put(Report("a-2")).ok());
  }
  Spool again(dir, 10);  // a restarted agent
  ASSERT_TRUE(again.Open().ok());
  ASSERT_TRUE(again.Put(Report("c-3")).ok());
  auto ids = again.List();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<std::string>{"b-1", "a-2", "c-3"}));
  auto r = again.Get("a-2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->posture().host().hostname(), "fs01");
  ASSERT_TRUE(again.Remove("b-1").ok());
  EXPECT_EQ(again.List()->size(), 2u);
}

TEST(SpoolTest, DropsOldestWhenFull) {
  Spool spool(TempDir(), 2);
  ASSERT_TRUE(spool.Open().ok());
  for (const char* id : {"r1", "r2", "r3"}) ASSERT_TRUE(spool.Put(Report(id)).ok());
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"r2", "r3"}));
  EXPECT_EQ(spool.dropped(), 1u);
}

TEST(SpoolTest, RejectMovesAside) {
  std::string dir = TempDir();
  Spool spool(dir, 5);
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put(Report("bad")).ok());
  ASSERT_TRUE(spool.Reject("bad").ok());
  EXPECT_TRUE(spool.List()->empty());
  FILE* f = std::fopen((dir + "/rejected/bad.report").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
}

TEST(SpoolTest, RefusesUnsafeIds) {
  Spool spool(TempDir(), 5);
  ASSERT_TRUE(spool.Open().ok());
  EXPECT_FALSE(spool.Put(Report("../../etc/passwd")).ok());
  EXPECT_FALSE(spool.Put(Report("")).ok());
}

}  // namespace
}  // namespace smbfleet::agent
