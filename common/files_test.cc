#include "common/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

std::string TempDir() { return smbfleet::testing::MakeTestDir("smbfleet-files"); }

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

TEST(FilesTest, PrivateFileIsOwnerOnly) {
  std::string dir = TempDir();
  ASSERT_TRUE(WritePrivateFileAtomic(dir + "/tls.key", "secret").ok());
  struct stat st;
  ASSERT_EQ(::stat((dir + "/tls.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(*ReadFile(dir + "/tls.key"), "secret");
}

TEST(FilesTest, UniqueTempFileThenRenameReplaces) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/target", "old").ok());
  absl::StatusOr<std::string> a = WriteUniqueTempFile(dir + "/.target.", "new", 0600);
  absl::StatusOr<std::string> b = WriteUniqueTempFile(dir + "/.target.", "other", 0600);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(*a, *b);
  EXPECT_THAT(*a, ::testing::StartsWith(dir + "/.target."));
  EXPECT_EQ(*ReadFile(*b), "other");
  ASSERT_TRUE(RenameFile(*a, dir + "/target").ok());
  EXPECT_EQ(*ReadFile(dir + "/target"), "new");
  EXPECT_FALSE(FileExists(*a));
  absl::Status missing = RenameFile(*a, dir + "/target");
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(std::string(missing.message()), ::testing::HasSubstr(dir + "/target"));
}

TEST(FilesTest, RemoveFileIgnoresMissing) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/x", "x").ok());
  ASSERT_TRUE(RemoveFile(dir + "/x").ok());
  EXPECT_FALSE(FileExists(dir + "/x"));
  EXPECT_TRUE(RemoveFile(dir + "/x").ok());
}

TEST(FilesTest, ListDirectoryGivesNamesKindsAndSizes) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/five", "12345").ok());
  ASSERT_TRUE(MakeDirs(dir + "/sub").ok());
  absl::StatusOr<std::vector<DirEntry>> entries = ListDirectory(dir);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);  // no "." or ".."
  for (const DirEntry& e : *entries) {
    if (e.name == "five") {
      EXPECT_TRUE(e.regular);
      EXPECT_EQ(e.bytes, 5u);
      EXPECT_GT(e.modified, absl::UnixEpoch());
    } else {
      EXPECT_EQ(e.name, "sub");
      EXPECT_FALSE(e.regular);
    }
  }
  EXPECT_TRUE(absl::IsNotFound(ListDirectory(dir + "/missing").status()));
}

TEST(FilesTest, LocalHostNameIsNotEmpty) { EXPECT_FALSE(LocalHostName().empty()); }

}  // namespace
}  // namespace smbfleet
