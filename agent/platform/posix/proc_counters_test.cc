// The /proc counter source over a fake /proc tree written by the test and scripted socket
// counters: rates from two readings, counters that go backwards, processes and connections
// that come and go, and files that cannot be read.

#include "agent/platform/posix/proc_counters.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::posix {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ScriptedTcpStats : public TcpStats {
 public:
  absl::StatusOr<std::vector<TcpConnection>> Connections(
      const std::vector<uint16_t>& local_ports) override {
    ports = local_ports;
    if (!error.ok()) return error;
    return connections;
  }
  std::vector<TcpConnection> connections;
  absl::Status error;
  std::vector<uint16_t> ports;
};

TcpConnection Conn(uint16_t remote_port, uint64_t sent, uint64_t received, uint32_t inode = 1) {
  TcpConnection c;
  c.local_address = "192.0.2.1";
  c.local_port = 445;
  c.remote_address = "192.0.2.9";
  c.remote_port = remote_port;
  c.bytes_acked = sent;
  c.bytes_received = received;
  c.inode = inode;
  return c;
}

class ProcCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/proc_counters_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    ProcCountersOptions options;
    options.proc_root = root_;
    options.now = [this] { return now_; };
    source_ = NewProcCounterSource(options, &tcp_);
    Meminfo(2'000'000);
  }

  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + rel).parent_path());
    std::ofstream(root_ + rel) << text;
  }
  // user nice system idle iowait irq softirq steal guest guest_nice
  void Stat(uint64_t busy, uint64_t idle) {
    Write("/stat", absl::StrCat("cpu  ", busy, " 0 0 ", idle, " 0 0 0 0 0 0\ncpu0 1 2 3 4\n"));
  }
  void Pid(int pid, const std::string& comm, uint64_t utime, uint64_t stime, int start = 100) {
    std::string fields = absl::StrCat(pid, " (", comm, ") S 1 1 1 0 -1 4194560 10 0 0 0 ", utime,
                                      " ", stime, " 0 0 20 0 1 0 ", start, " 1000 100");
    Write(absl::StrCat("/", pid, "/stat"), fields);
  }
  void Meminfo(uint64_t kib) {
    Write("/meminfo", absl::StrCat("MemTotal:       8000000 kB\nMemAvailable:   ", kib, " kB\n"));
  }
  CounterReading Next(std::chrono::seconds step = std::chrono::seconds(10)) {
    now_ += step;
    return source_->Sample();
  }

  std::string root_;
  std::chrono::steady_clock::time_point now_{};
  ScriptedTcpStats tcp_;
  std::unique_ptr<CounterSource> source_;
};

TEST_F(ProcCountersTest, RatesFromTwoReadings) {
  Stat(1000, 9000);
  Pid(10, "smbd", 50, 50);
  Pid(11, "smbd[192.0.2.9]", 10, 0);
  Pid(12, "sshd", 500, 500);
  tcp_.connections = {Conn(50000, 1'000'000, 2'000)};
  CounterReading first = Next();
  EXPECT_THAT(first.errors, IsEmpty());
  EXPECT_FALSE(first.sample.has_cpu_percent());  // nothing to make a rate from yet
  EXPECT_FALSE(first.sample.has_smb_cpu_percent());
  EXPECT_FALSE(first.sample.has_smb_read_bytes_per_second());
  EXPECT_EQ(first.sample.available_memory_bytes(), 2'000'000u * 1024);
  EXPECT_EQ(tcp_.ports, (std::vector<uint16_t>{445, 139}));

  Stat(1250, 9750);  // 250 busy of 1000
  Pid(10, "smbd", 80, 70);
  Pid(11, "smbd[192.0.2.9]", 60, 0);  // 50 + 50: 100 of 1000 ticks
  Pid(12, "sshd", 900, 900);
  tcp_.connections = {Conn(50000, 6'000'000, 102'000)};
  CounterReading second = Next();
  EXPECT_THAT(second.errors, IsEmpty());
  EXPECT_DOUBLE_EQ(second.sample.cpu_percent(), 25.0);
  EXPECT_DOUBLE_EQ(second.sample.smb_cpu_percent(), 10.0);
  EXPECT_DOUBLE_EQ(second.sample.smb_read_bytes_per_second(), 500'000.0);
  EXPECT_DOUBLE_EQ(second.sample.smb_write_bytes_per_second(), 10'000.0);
}

TEST_F(ProcCountersTest, ACounterThatGoesBackwardsIsAbsent) {
  Stat(1000, 9000);
  Pid(10, "smbd", 50, 50);
  tcp_.connections = {Conn(50000, 1'000'000, 2'000)};
  Next();
  Stat(900, 9500);                                   // busy went backwards
  tcp_.connections = {Conn(50000, 500'000, 3'000)};  // so did the bytes sent
  CounterReading r = Next();
  EXPECT_FALSE(r.sample.has_cpu_percent());
  EXPECT_FALSE(r.sample.has_smb_cpu_percent());  // no total to share
  EXPECT_FALSE(r.sample.has_smb_read_bytes_per_second());
  EXPECT_DOUBLE_EQ(r.sample.smb_write_bytes_per_second(), 100.0);
  // From the new base on, rates again.
  Stat(1000, 9900);
  tcp_.connections = {Conn(50000, 600'000, 3'000)};
  r = Next();
  EXPECT_DOUBLE_EQ(r.sample.cpu_percent(), 20.0);
  EXPECT_DOUBLE_EQ(r.sample.smb_read_bytes_per_second(), 10'000.0);
}

TEST_F(ProcCountersTest, VanishedProcessesAndConnectionsCountNothingNewOnesTheirWhole) {
  Stat(0, 0);
  Pid(10, "smbd", 100, 0);
  Pid(11, "smbd", 500, 0);
  tcp_.connections = {Conn(50000, 1000, 0, 1), Conn(50001, 9000, 0, 2)};
  Next();
  Stat(0, 1000);
  std::filesystem::remove_all(root_ + "/11");
  Pid(10, "smbd", 110, 0);                      // +10
  Pid(12, "smbd", 20, 0);                       // new: +20
  Pid(13, "smbd", 5, 0, /*start=*/900);         // new
  tcp_.connections = {Conn(50000, 2000, 0, 1),  // +1000
                      Conn(50001, 30, 0, 3)};   // same ports, a new socket: +30
  CounterReading r = Next();
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 3.5);
  EXPECT_DOUBLE_EQ(r.sample.smb_read_bytes_per_second(), 103.0);
  // A pid reused by a new process (another start time) is a new process, not a backwards one.
  Stat(0, 2000);
  Pid(10, "smbd", 1, 0, /*start=*/5000);
  Pid(12, "smbd", 20, 0);
  Pid(13, "smbd", 5, 0, /*start=*/900);
  r = Next();
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 0.1);
}

// Each sample reads only new pids, the server's and those new in the last sample: what that
// must not change.
TEST_F(ProcCountersTest, AServerProcessThatDiedIsNotCountedAndANewOneIs) {
  Stat(0, 0);
  Pid(10, "smbd", 100, 0);
  Pid(11, "smbd", 500, 0);
  Pid(12, "sshd", 50, 0);
  Next();
  Next();  // 12 is no longer new: it is not read again until the next whole scan

  // 11 died and its pid went to a process that is not the server; a new server process started.
  Stat(0, 1000);
  Pid(10, "smbd", 110, 0);            // +10
  Pid(11, "cron", 9000, 0, 7000);     // not the server: nothing
  Pid(20, "smbd[192.0.2.9]", 30, 0);  // new: +30
  CounterReading r = Next();
  EXPECT_THAT(r.errors, IsEmpty());
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 4.0);

  // The server's processes keep being read: their growth, and a pid reused by another server
  // process (a new start time) counts whole.
  Stat(0, 2000);
  Pid(10, "smbd", 150, 0);      // +40
  Pid(20, "smbd", 5, 0, 8000);  // another process on pid 20: +5
  r = Next();
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 4.5);

  // The server gone entirely: nothing, not the last figures read.
  Stat(0, 3000);
  std::filesystem::remove_all(root_ + "/10");
  std::filesystem::remove_all(root_ + "/20");
  r = Next();
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 0.0);
}

TEST_F(ProcCountersTest, AProcessThatBecomesTheServerAfterItStartedIsFound) {
  Stat(0, 0);
  Pid(10, "smbd", 100, 0);
  Next();
  // Forked, not yet exec'd at this sample: read again at the next one.
  Stat(0, 1000);
  Pid(30, "bash", 1, 0);
  Next();
  Stat(0, 2000);
  Pid(30, "smbd", 20, 0);  // exec'd smbd since: its whole time
  CounterReading r = Next();
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 2.0);

  // A process settled as something else that turns into the server later is found at the next
  // whole scan (every rescan_interval, 5 minutes).
  Pid(40, "python3", 1, 0);
  Stat(0, 3000);
  Next();
  Stat(0, 4000);
  Next();
  Pid(40, "smbd", 70, 0);
  Stat(0, 5000);
  r = Next(std::chrono::seconds(15));
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 0.0);  // not read: settled as python3
  Stat(0, 6000);
  r = Next(std::chrono::minutes(5));
  EXPECT_DOUBLE_EQ(r.sample.smb_cpu_percent(), 7.0);
}

TEST_F(ProcCountersTest, ASettledProcessThatIsNotTheServerIsNotReadAgainUntilTheWholeScan) {
  Stat(0, 0);
  Pid(10, "smbd", 100, 0);
  Pid(12, "sshd", 50, 0);
  Next();
  Next();
  // Were 12's stat read, this would be an error of the sample.
  Write("/12/stat", "garbage");
  EXPECT_THAT(Next().errors, IsEmpty());
  CounterReading r = Next(std::chrono::minutes(5));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0], HasSubstr(root_ + "/12/stat: no (comm)"));
  // A stat that cannot be parsed is read (and reported) every sample until it can.
  EXPECT_EQ(Next().errors.size(), 1u);
  Pid(12, "sshd", 50, 0);
  EXPECT_THAT(Next().errors, IsEmpty());
}

TEST_F(ProcCountersTest, UnreadableInputsLeaveTheirCountersAbsentWithAnErrorNamingThem) {
  Stat(1000, 9000);
  tcp_.error = absl::PermissionDeniedError("sock_diag: the kernel refused the dump");
  Write("/meminfo", "MemTotal: 8000000 kB\n");
  Next();
  Stat(1100, 9900);
  CounterReading r = Next();
  EXPECT_DOUBLE_EQ(r.sample.cpu_percent(), 10.0);
  EXPECT_FALSE(r.sample.has_smb_read_bytes_per_second());
  EXPECT_FALSE(r.sample.has_smb_write_bytes_per_second());
  EXPECT_FALSE(r.sample.has_available_memory_bytes());
  std::string errors;
  for (const auto& e : r.errors) errors += e + "\n";
  EXPECT_THAT(errors, HasSubstr("the kernel refused the dump"));
  EXPECT_THAT(errors, HasSubstr(root_ + "/meminfo: no MemAvailable line"));

  std::filesystem::remove(root_ + "/stat");
  r = Next();
  EXPECT_FALSE(r.sample.has_cpu_percent());
  EXPECT_FALSE(r.sample.has_smb_cpu_percent());
  ASSERT_FALSE(r.errors.empty());
  EXPECT_THAT(r.errors[0], HasSubstr("cpu_percent: " + root_ + "/stat: "));

  Write("/stat", "intr 1 2 3\n");
  r = Next();
  EXPECT_FALSE(r.sample.has_cpu_percent());
  EXPECT_THAT(r.errors[0], HasSubstr("no 'cpu' line"));
}

TEST_F(ProcCountersTest, AKernelWithoutByteCountsLeavesThemAbsent) {
  Stat(0, 0);
  TcpConnection old = Conn(50000, 0, 0);
  old.bytes_acked.reset();
  old.bytes_received.reset();
  tcp_.connections = {old};
  Next();
  CounterReading r = Next();
  EXPECT_FALSE(r.sample.has_smb_read_bytes_per_second());
  ASSERT_FALSE(r.errors.empty());
  EXPECT_THAT(r.errors.back(), HasSubstr("no bytes_acked"));
}

TEST(ProcCountersLiveTest, ReadsThisHostsProc) {
  auto source = NewProcCounterSource({}, nullptr);
  source->Sample();
  CounterReading r = source->Sample();
  EXPECT_THAT(r.errors, IsEmpty());
  EXPECT_GT(r.sample.available_memory_bytes(), 0u);
}

}  // namespace
}  // namespace smbfleet::agent::posix
