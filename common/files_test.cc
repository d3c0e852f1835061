#include "common/files.h"

#include <cstdlib>

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

}  // namespace
}  // namespace smbfleet
