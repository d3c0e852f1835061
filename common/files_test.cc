#include "common/files.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/smbfleet-files-XXXXXX";
  return ::mkdtemp(tmpl);
}

TEST(FilesTest, AtomicWriteThenRead) {
  std::string dir = TempDir();
  std::string path = dir + "/a.txt";
  ASSERT_TRUE(WriteFileAtomic(path, "hello").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "world").ok());
  auto content = ReadFile(path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "world");
}

TEST(FilesTest, MissingFileIsNotFoundAndNamesPath) {
  auto content = ReadFile("/nonexistent/x.json");
  ASSERT_FALSE(content.ok());
  EXPECT_TRUE(absl::IsNotFound(content.status()));
  EXPECT_THAT(std::string(content.status().message()), ::testing::HasSubstr("/nonexistent/x.json"));
}

TEST(FilesTest, SizeLimit) {
  std::string dir = TempDir();
  std::string path = dir + "/big";
  ASSERT_TRUE(WriteFileAtomic(path, std::string(100, 'x')).ok());
  EXPECT_TRUE(ReadFile(path, 100).ok());
  auto too_big = ReadFile(path, 99);
  ASSERT_FALSE(too_big.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(too_big.status()));
}

TEST(FilesTest, MakeDirsCreatesParents) {
  std::string dir = TempDir() + "/a/b/c";
  ASSERT_TRUE(MakeDirs(dir).ok());
  EXPECT_TRUE(FileExists(dir));
  EXPECT_TRUE(MakeDirs(dir).ok());
}

TEST(FilesTest, AtomicWriteLeavesNoTempFileAndNamesItsLeftovers) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/a.report", "x").ok());
  EXPECT_TRUE(FileExists(dir + "/a.report"));
  EXPECT_FALSE(FileExists(dir + "/a.report.tmp." + std::to_string(::getpid())));
  EXPECT_TRUE(IsAtomicWriteLeftover("1-a.report.tmp.4242"));
  EXPECT_TRUE(IsAtomicWriteLeftover("benchmark.pb.tmp.1"));
  EXPECT_FALSE(IsAtomicWriteLeftover("notes.tmp.txt"));
  EXPECT_FALSE(IsAtomicWriteLeftover("a.report.tmp."));
  EXPECT_FALSE(IsAtomicWriteLeftover(".tmp.12"));
  EXPECT_FALSE(IsAtomicWriteLeftover("a.report"));
}

TEST(FilesTest, RemoveFileDurably) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/gone", "x").ok());
  ASSERT_TRUE(RemoveFileDurably(dir + "/gone").ok());
  EXPECT_FALSE(FileExists(dir + "/gone"));
  EXPECT_TRUE(RemoveFileDurably(dir + "/gone").ok());  // already gone is fine
  EXPECT_TRUE(SyncDirectory(dir).ok());
  EXPECT_TRUE(absl::IsNotFound(SyncDirectory(dir + "/missing")));
}

}  // namespace
}  // namespace smbfleet
