#include "agent/core/spool.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent {
namespace {

smbfleet::v1::ReportRequest Report(const std::string& id) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id(id);
  r.mutable_posture()->mutable_host()->set_hostname("fs01");
  return r;
}

std::string TempDir() { return smbfleet::testing::MakeTestDir("smbfleet-spool"); }

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

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The one spool file of `id`.
std::string FileOf(const std::string& dir, const std::string& id) {
  for (const std::string& name : FilesIn(dir)) {
    if (name.find("-" + id + ".report") != std::string::npos) return dir + "/" + name;
  }
  return "";
}

TEST(SpoolTest, FilesAreFramedAndADamagedOrTornFileIsDataLoss) {
  std::string dir = TempDir();
  Spool spool(dir, 10);
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put(Report("flip")).ok());
  ASSERT_TRUE(spool.Put(Report("torn")).ok());
  std::string flip = FileOf(dir, "flip");
  auto bytes = ReadFile(flip);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 4), "SFSP");
  // One bit of the payload flipped: the protobuf may still parse, the checksum does not match.
  std::string damaged = *bytes;
  damaged.back() = static_cast<char>(damaged.back() ^ 0x01);
  ASSERT_TRUE(WriteFileAtomic(flip, damaged).ok());
  auto got = spool.Get("flip");
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(std::string(got.status().message()), ::testing::HasSubstr("checksum"));
  EXPECT_THAT(std::string(got.status().message()), ::testing::HasSubstr(flip));

  std::string torn = FileOf(dir, "torn");
  bytes = ReadFile(torn);
  ASSERT_TRUE(bytes.ok());
  for (size_t keep : {bytes->size() - 1, size_t{30}, size_t{4}}) {
    ASSERT_TRUE(WriteFileAtomic(torn, bytes->substr(0, keep)).ok());
    got = spool.Get("torn");
    EXPECT_TRUE(absl::IsDataLoss(got.status())) << keep << ": " << got.status();
  }
  EXPECT_EQ(spool.counts().corrupt, 0u);
  ASSERT_TRUE(spool.MoveCorrupt("flip").ok());
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"torn"}));
  EXPECT_EQ(spool.counts().corrupt, 1u);
  EXPECT_EQ(FilesIn(dir + "/rejected"), (std::vector<std::string>{"flip.corrupt"}));
}

TEST(SpoolTest, ReadsFilesWrittenBeforeTheFrame) {
  std::string dir = TempDir();
  // What the previous agent version left: the bare serialised report.
  ASSERT_TRUE(
      WriteFileAtomic(dir + "/1000-old-1.report", Report("old-1").SerializeAsString()).ok());
  Spool spool(dir, 10);
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put(Report("new-2")).ok());
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"old-1", "new-2"}));
  auto old = spool.Get("old-1");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->report_id(), "old-1");
  EXPECT_EQ(old->posture().host().hostname(), "fs01");
}

TEST(SpoolTest, OpenRemovesTempFilesOfAKilledWrite) {
  std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/1000-a.report", FrameReport("")).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/1001-b.report.tmp.4242", "half a rep").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/benchmark.pb.tmp.17", "x").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/notes.tmp.txt", "kept").ok());
  Spool spool(dir, 10);
  ASSERT_TRUE(spool.Open().ok());
  EXPECT_EQ(FilesIn(dir), (std::vector<std::string>{"1000-a.report", "notes.tmp.txt"}));
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"a"}));
}

TEST(SpoolTest, BoundedByBytesAndAgeOldestFirstAndCounted) {
  std::string dir = TempDir();
  absl::Time now = absl::Now();
  SpoolLimits limits;
  limits.max_reports = 100;
  const size_t one = FrameReport(Report("r1").SerializeAsString()).size();
  limits.max_bytes = 3 * one;  // room for three reports of this size
  limits.max_age = std::chrono::hours(24);
  Spool spool(dir, limits, [&] { return now; });
  ASSERT_TRUE(spool.Open().ok());
  for (const char* id : {"r1", "r2", "r3", "r4"}) ASSERT_TRUE(spool.Put(Report(id)).ok());
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"r2", "r3", "r4"}));
  EXPECT_EQ(spool.counts().dropped, 1u);

  // A day and more later every spooled report is too old: they go, the new one stays.
  now += absl::Hours(25);
  ASSERT_TRUE(spool.Put(Report("r5")).ok());
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"r5"}));
  EXPECT_EQ(spool.counts().dropped, 4u);
  EXPECT_EQ(spool.dropped(), 4u);

  // Delivered counts are taken off; later ones stay pending.
  SpoolCounts told;
  told.dropped = 3;
  spool.Forget(told);
  EXPECT_EQ(spool.counts().dropped, 1u);

  // A restart keeps the pending count and drops what aged while the agent was down.
  now += absl::Hours(25);
  Spool again(dir, limits, [&] { return now; });
  ASSERT_TRUE(again.Open().ok());
  EXPECT_TRUE(again.List()->empty());
  EXPECT_EQ(again.counts().dropped, 2u);
  EXPECT_EQ(again.dropped(), 1u);
}

TEST(SpoolTest, PendingCountsSurviveARestartAndABadCountsFileStartsAtZero) {
  std::string dir = TempDir();
  {
    Spool spool(dir, 1);
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_TRUE(spool.Put(Report("a")).ok());
    ASSERT_TRUE(spool.Put(Report("b")).ok());  // a dropped
    ASSERT_TRUE(spool.Reject("b").ok());
  }
  Spool again(dir, 1);
  ASSERT_TRUE(again.Open().ok());
  EXPECT_EQ(again.counts().dropped, 1u);
  EXPECT_EQ(again.counts().rejected, 1u);
  SpoolCounts told;
  told.dropped = 1;
  told.rejected = 1;
  again.Forget(told);
  EXPECT_FALSE(FileExists(dir + "/counts"));  // nothing pending: no file

  ASSERT_TRUE(WriteFileAtomic(dir + "/counts", "7 x\n").ok());
  Spool bad(dir, 1);
  ASSERT_TRUE(bad.Open().ok());
  EXPECT_TRUE(bad.counts().empty());
}

TEST(SpoolTest, RejectedIsBoundedOldestFirst) {
  std::string dir = TempDir();
  SpoolLimits limits;
  limits.max_rejected = 2;
  Spool spool(dir, limits);
  ASSERT_TRUE(spool.Open().ok());
  for (const char* id : {"x1", "x2", "x3", "x4"}) {
    ASSERT_TRUE(spool.Put(Report(id)).ok());
    ASSERT_TRUE(spool.Reject(id).ok());
  }
  EXPECT_EQ(FilesIn(dir + "/rejected"), (std::vector<std::string>{"x3.report", "x4.report"}));
  EXPECT_EQ(spool.counts().rejected, 4u);
}

// A spool on a tmpfs this test mounts, so that the disk really fills.
class SpoolFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=256k") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  // Fills the file system up to its last byte.
  void Fill(const std::string& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    std::string block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    while (::write(fd, block.data(), 1) > 0) {
    }
    ::close(fd);
  }
  smbfleet::v1::ReportRequest Big(const std::string& id) {
    auto r = Report(id);
    r.mutable_posture()->mutable_host()->set_os_version(std::string(40 << 10, 'v'));
    return r;
  }

  std::string dir_;
  bool mounted_ = false;
};

TEST_F(SpoolFullDiskTest, FullDiskDropsOldestForRoomFailsCleanlyAndRecovers) {
  Spool spool(dir_ + "/spool", 100);
  ASSERT_TRUE(spool.Open().ok());
  ASSERT_TRUE(spool.Put(Big("a1")).ok());
  ASSERT_TRUE(spool.Put(Big("a2")).ok());
  Fill(dir_ + "/filler");

  // No space: the oldest report gives way to the new one.
  absl::Status s = spool.Put(Big("a3"));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(*spool.List(), (std::vector<std::string>{"a2", "a3"}));
  EXPECT_EQ(spool.counts().dropped, 1u);
  EXPECT_TRUE(spool.write_failing());  // the episode lasts until a write works at once

  // Nothing left to give way once the spool is empty: Put fails, leaves no temp file behind.
  ASSERT_TRUE(spool.Remove("a2").ok());
  ASSERT_TRUE(spool.Remove("a3").ok());
  Fill(dir_ + "/filler2");
  s = spool.Put(Big("a4"));
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(spool.write_failing());
  s = spool.Put(Big("a5"));
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_TRUE(spool.List()->empty());
  for (const std::string& name : FilesIn(dir_ + "/spool")) {
    EXPECT_FALSE(IsAtomicWriteLeftover(name)) << name;
  }
  EXPECT_EQ(spool.counts().dropped, 3u);  // the two reports that could not be kept

  // Space returns: the spool keeps reports again.
  ASSERT_EQ(::unlink((dir_ + "/filler").c_str()), 0);
  ASSERT_EQ(::unlink((dir_ + "/filler2").c_str()), 0);
  s = spool.Put(Big("a6"));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_FALSE(spool.write_failing());
  auto got = spool.Get("a6");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->posture().host().os_version().size(), size_t{40 << 10});
}

}  // namespace
}  // namespace smbfleet::agent
