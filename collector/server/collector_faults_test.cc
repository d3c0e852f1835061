// The collector as a process under faults, against a private PostgreSQL that each test starts,
// stops, restarts or freezes (SIGSTOP) itself: calls fail UNAVAILABLE within the bounds and
// recover without a restart; start waits for a late database; SIGTERM during a burst exits 0
// with every acked report stored, and exits even when the database is stuck. Figures are
// printed as one JSON line per test (no timing assertions).
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "collector/server/collector.h"
#include "collector/server/startup.h"
#include "collector/store/postgres/connection_pool.h"
#include "collector/store/postgres/pg_store.h"
#include "common/logging.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "tests/testing/pg_fixture.h"

extern char** environ;

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string Sh(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  if (rc != nullptr) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A PostgreSQL of this test's own (deploy/pg.sh), on a port of its own.
class PrivatePg {
 public:
  PrivatePg() : dir_(smbfleet::testing::MakeTempDir("smbfleet-faults-pg")), port_(FreePort()) {}
  ~PrivatePg() {
    Thaw();
    Stop();
    std::filesystem::remove_all(dir_);
  }
  bool Start() {
    int rc = 0;
    dsn_ = Sh(absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/pg.sh start ", dir_, " ", port_,
                           " 2>&1"),
              &rc);
    return rc == 0;
  }
  void Stop() {
    Sh(absl::StrCat("bash ", SMBFLEET_SOURCE_DIR, "/deploy/pg.sh stop ", dir_, " 2>&1"));
  }
  // Every process of the server stops (SIGSTOP) or goes on (SIGCONT): a server that accepts
  // connections in the kernel but answers nothing.
  void Freeze() { Signal(SIGSTOP); }
  void Thaw() { Signal(SIGCONT); }
  const std::string& dsn() const { return dsn_; }
  int port() const { return port_; }

 private:
  void Signal(int sig) {
    std::ifstream pidfile(dir_ + "/data/postmaster.pid");
    pid_t postmaster = 0;
    if (!(pidfile >> postmaster) || postmaster <= 0) return;
    kill(postmaster, sig);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      pid_t pid = 0;
      if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      std::getline(stat, line);
      // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
      size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::vector<std::string> fields = absl::StrSplit(line.substr(close + 2), ' ');
      pid_t ppid = 0;
      if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &ppid) && ppid == postmaster) {
        kill(pid, sig);
      }
    }
  }

  std::string dir_;
  int port_;
  std::string dsn_;
};

// The collector's log lines while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    sink_->set_pattern("%l %v");
    Logger("collector")->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = Logger("collector")->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  int Count(absl::string_view what) {
    Logger("collector")->flush();
    int n = 0;
    for (absl::string_view line : absl::StrSplit(out_.str(), '\n'))
      n += absl::StrContains(line, what);
    return n;
  }
  std::string Text() { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

std::string ReportId(int n) { return absl::StrFormat("00000000-0000-4000-8000-%012d", n); }

v1::ReportRequest Report(const std::string& host, int n) {
  v1::ReportRequest r;
  r.set_report_id(ReportId(n));
  r.mutable_posture()->mutable_host()->set_hostname(host);
  r.mutable_posture()->mutable_server()->set_smb1_enabled(n % 2 == 0);
  return r;
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

class CollectorFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();  // the postgres label: PostgreSQL's binaries are installed
    pg_ = std::make_unique<PrivatePg>();
    ASSERT_TRUE(pg_->Start()) << pg_->dsn();
  }
  void TearDown() override { pg_.reset(); }

  std::shared_ptr<grpc::Channel> Channel(const std::string& pki, const std::string& who, int port) {
    auto m = LoadTls({pki + "/" + who + ".pem", pki + "/" + who + ".key", pki + "/ca.pem"});
    EXPECT_TRUE(m.ok()) << m.status();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    args.SetMaxSendMessageSize(64 << 20);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                     MutualTlsChannelCredentials(*m), args);
  }

  static grpc::Status Send(const std::shared_ptr<grpc::Channel>& channel,
                           const v1::ReportRequest& r,
                           absl::Duration deadline = absl::Seconds(30)) {
    auto stub = v1::AgentService::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    v1::ReportResponse response;
    return stub->Report(&ctx, r, &response);
  }

  // The collector configuration the tests start from: short bounds.
  CollectorConfig Config(const std::string& pki) {
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.tls = {pki + "/collector.pem", pki + "/collector.key", pki + "/ca.pem"};
    config.database_dsn = pg_->dsn();
    config.database_pool_size = 2;
    config.database.acquire_timeout = std::chrono::seconds(1);
    config.database.connect_timeout = std::chrono::seconds(2);
    config.database.statement_timeout = std::chrono::seconds(1);
    config.keepalive_interval = std::chrono::seconds(30);
    return config;
  }

  std::unique_ptr<PrivatePg> pg_;
};

// Before: no statement_timeout, no lease bound: every call on a frozen server parked its
// thread for good (the futures below never became ready).
TEST_F(CollectorFaultsTest, CallsFailUnavailableWhenTheDatabaseStopsAnswering) {
  SessionLimits limits;
  limits.connect_timeout = absl::Seconds(2);
  limits.statement_timeout = absl::Seconds(1);
  auto dsn = WithSessionLimits(pg_->dsn(), limits);
  ASSERT_TRUE(dsn.ok()) << dsn.status();
  EXPECT_THAT(*dsn, HasSubstr("connect_timeout='2'"));
  EXPECT_THAT(*dsn, HasSubstr("keepalives='1'"));
  PoolOptions options;
  options.acquire_timeout = absl::Seconds(1);
  options.lease_limit = absl::Seconds(2);
  ConnectionPool pool(*dsn, 2, options);
  auto query = [&pool](const std::string& sql) {
    return pool.Run<pqxx::read_transaction>("probe", [&sql](pqxx::read_transaction& tx) {
      tx.exec(sql);
      return absl::OkStatus();
    });
  };
  ASSERT_TRUE(query("SELECT 1").ok());
  absl::StatusOr<std::string> shown = pool.Run<pqxx::read_transaction>(
      "show", [](pqxx::read_transaction& tx) -> absl::StatusOr<std::string> {
        return tx.exec("SHOW statement_timeout")[0][0].as<std::string>();
      });
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_EQ(*shown, "1s");

  // A statement that runs too long is cancelled by the server: UNAVAILABLE, retry later.
  absl::Status slow = query("SELECT pg_sleep(10)");
  EXPECT_EQ(slow.code(), absl::StatusCode::kUnavailable) << slow;
  EXPECT_THAT(slow.message(), HasSubstr("statement timeout"));

  pg_->Freeze();
  const absl::Time frozen = absl::Now();
  std::vector<std::future<std::pair<absl::Status, absl::Duration>>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&query] {
      absl::Time start = absl::Now();
      absl::Status s = query("SELECT 1");
      return std::pair{s, absl::Now() - start};
    }));
  }
  std::vector<std::string> seconds;
  int unavailable = 0, parked = 0;
  for (auto& call : calls) {
    // Far above the bounds; only a parked call gets here.
    if (call.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ++parked;
      continue;
    }
    auto [status, took] = call.get();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    unavailable += absl::IsUnavailable(status);
    seconds.push_back(absl::StrFormat("%.2f", Seconds(took)));
  }
  const absl::Duration all_failed = absl::Now() - frozen;
  pg_->Thaw();
  EXPECT_EQ(parked, 0) << "calls parked on a database that stopped answering";
  if (parked > 0) {
    for (auto& call : calls) call.wait();  // thawed: they finish now
  }
  EXPECT_EQ(unavailable, 6);
  EXPECT_TRUE(pool.unreachable());
  // Thawed: the next call works on a new connection.
  absl::Status after = query("SELECT 1");
  EXPECT_TRUE(after.ok()) << after;
  EXPECT_FALSE(pool.unreachable());
  std::printf(
      "{\"test\":\"database_frozen\",\"calls\":6,\"unavailable\":%d,\"parked\":%d,"
      "\"call_seconds\":[%s],\"all_failed_seconds\":%.2f}\n",
      unavailable, parked, absl::StrJoin(seconds, ",").c_str(), Seconds(all_failed));
}

// Shutdown's last resort: Close() cuts the call parked on a frozen server and fails the next
// one at once, where before it (CutLeases) the next one opened a connection and waited
// connect_timeout on a server that does not answer.
TEST_F(CollectorFaultsTest, ClosingThePoolFailsTheParkedCallAndEveryLaterOne) {
  SessionLimits limits;
  limits.connect_timeout = absl::Seconds(20);
  limits.statement_timeout = absl::Seconds(30);
  auto dsn = WithSessionLimits(pg_->dsn(), limits);
  ASSERT_TRUE(dsn.ok()) << dsn.status();
  PoolOptions options;
  options.acquire_timeout = absl::Seconds(1);
  options.lease_limit = absl::Seconds(35);
  ConnectionPool pool(*dsn, 2, options);
  auto query = [&pool] {
    return pool.Run<pqxx::read_transaction>("probe", [](pqxx::read_transaction& tx) {
      tx.exec("SELECT 1");
      return absl::OkStatus();
    });
  };
  ASSERT_TRUE(query().ok());

  pg_->Freeze();
  auto parked = std::async(std::launch::async, query);
  EXPECT_EQ(parked.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "the server is frozen: the call should wait on it";
  EXPECT_EQ(pool.Close(), 1u);
  // Far below the 30 s statement timeout; only a call the cut missed is still waiting.
  ASSERT_EQ(parked.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  absl::Status cut = parked.get();
  EXPECT_EQ(cut.code(), absl::StatusCode::kUnavailable) << cut;
  EXPECT_THAT(cut.message(), HasSubstr("connection closed"));
  absl::Status later = query();
  pg_->Thaw();
  EXPECT_EQ(later.code(), absl::StatusCode::kUnavailable) << later;
  EXPECT_THAT(later.message(), HasSubstr("the collector is stopping"));
}

// Before: a report after the restart could land on a pooled connection the restart had broken,
// and nothing was logged about the outage at all (or a line per failed call).
TEST_F(CollectorFaultsTest, OutageFailsFastAndRecoversWithoutRestart) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  LogCapture log;
  CollectorConfig config = Config(pki);
  auto started = StartFromConfig(config);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<Collector> collector = *std::move(started);
  auto agent = Channel(pki, "agent-fs01", collector->port());
  ASSERT_TRUE(Send(agent, Report("fs01", 1)).ok());
  ASSERT_TRUE(Send(agent, Report("fs01", 2)).ok());  // two pooled connections, probably

  pg_->Stop();
  std::vector<std::string> seconds;
  for (int n = 3; n < 8; ++n) {
    absl::Time start = absl::Now();
    grpc::Status s = Send(agent, Report("fs01", n));
    seconds.push_back(absl::StrFormat("%.3f", Seconds(absl::Now() - start)));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  // One line per outage, not one per call. A connection attempt that got through while the
  // server was still stopping makes a second, real, outage: at most two for the five calls.
  EXPECT_GE(log.Count("database unreachable"), 1) << log.Text();
  EXPECT_LE(log.Count("database unreachable"), 2) << log.Text();

  ASSERT_TRUE(pg_->Start());
  // The first report after the database returns is stored: no broken connection is reused.
  grpc::Status back = Send(agent, Report("fs01", 8));
  EXPECT_TRUE(back.ok()) << back.error_message();
  EXPECT_TRUE(Send(agent, Report("fs01", 9)).ok());
  EXPECT_GE(log.Count("database reachable again"), 1) << log.Text();
  EXPECT_LE(log.Count("database reachable again"), 2) << log.Text();
  EXPECT_EQ(smbfleet::testing::QueryValue(pg_->dsn(), "SELECT count(*) FROM reports"), "4");
  collector.reset();
  std::printf("{\"test\":\"database_restart\",\"failed_call_seconds\":[%s]}\n",
              absl::StrJoin(seconds, ",").c_str());
}

// Before: the collector gave up at once when the database was not up yet.
TEST_F(CollectorFaultsTest, StartWaitsForALateDatabaseAndGivesUpWithTheReason) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  CollectorConfig config = Config(pki);
  pg_->Stop();

  config.database.startup_timeout = std::chrono::seconds(3);
  absl::Time start = absl::Now();
  auto refused = StartFromConfig(config);
  const absl::Duration gave_up = absl::Now() - start;
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.status().message(), HasSubstr("not reachable after"));
  EXPECT_THAT(refused.status().message(), HasSubstr("refused"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr("password")));

  config.database.startup_timeout = std::chrono::seconds(60);
  std::thread late([this] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    pg_->Start();
  });
  start = absl::Now();
  auto started = StartFromConfig(config);
  const absl::Duration waited = absl::Now() - start;
  late.join();
  ASSERT_TRUE(started.ok()) << started.status();
  auto agent = Channel(pki, "agent-fs01", (*started)->port());
  EXPECT_TRUE(Send(agent, Report("fs01", 1)).ok());
  started->reset();
  std::printf("{\"test\":\"late_database\",\"gave_up_seconds\":%.2f,\"waited_seconds\":%.2f}\n",
              Seconds(gave_up), Seconds(waited));
}

// An AckChange far over limits.max_message_bytes is refused before any work, naming the limit.
TEST_F(CollectorFaultsTest, OversizedSmallRpcIsRefusedNamingTheLimit) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  CollectorConfig config = Config(pki);
  config.max_message_bytes = 4096;
  auto started = StartFromConfig(config);
  ASSERT_TRUE(started.ok()) << started.status();
  auto stub = v1::AgentService::NewStub(Channel(pki, "agent-fs01", (*started)->port()));
  v1::AckChangeRequest ack;
  ack.set_change_id(std::string(8192, 'c'));
  grpc::ClientContext ctx;
  v1::AckChangeResponse response;
  grpc::Status s = stub->AckChange(&ctx, ack, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("limits.max_message_bytes (4096)"));
  v1::WatchRequest watch;
  watch.set_agent_version(std::string(8192, 'w'));
  grpc::ClientContext watch_ctx;
  auto reader = stub->Watch(&watch_ctx, watch);
  v1::WatchResponse message;
  EXPECT_FALSE(reader->Read(&message));
  grpc::Status watch_status = reader->Finish();
  EXPECT_EQ(watch_status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << watch_status.error_message();
  EXPECT_THAT(watch_status.error_message(), HasSubstr("Watch request of"));
  // Enroll (the call a caller without a certificate may make) is held to the same limit.
  auto enrollment = v1::EnrollmentService::NewStub(Channel(pki, "agent-fs01", (*started)->port()));
  v1::EnrollRequest enroll;
  enroll.set_token(std::string(8192, 't'));
  grpc::ClientContext enroll_ctx;
  v1::EnrollResponse enrolled;
  grpc::Status enroll_status = enrollment->Enroll(&enroll_ctx, enroll, &enrolled);
  EXPECT_EQ(enroll_status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << enroll_status.error_message();
  EXPECT_THAT(enroll_status.error_message(), HasSubstr("Enroll request of"));
  // A report of the same size is fine: reports have their own, larger limit.
  v1::ReportRequest big = Report("fs01", 1);
  big.mutable_posture()->mutable_host()->set_os_version(std::string(8192, 'v'));
  grpc::Status report = Send(Channel(pki, "agent-fs01", (*started)->port()), big);
  EXPECT_NE(report.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << report.error_message();
  started->reset();
}

// limits.max_streams_per_connection: with 1, an open Watch stream holds the connection's only
// stream and a Report on the same connection waits until the stream ends.
TEST_F(CollectorFaultsTest, StreamsPerConnectionAreCapped) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  CollectorConfig config = Config(pki);
  config.max_streams_per_connection = 1;
  auto started = StartFromConfig(config);
  ASSERT_TRUE(started.ok()) << started.status();
  auto channel = Channel(pki, "agent-fs01", (*started)->port());
  ASSERT_TRUE(Send(channel, Report("fs01", 1)).ok());  // connected, settings exchanged

  auto stub = v1::AgentService::NewStub(channel);
  grpc::ClientContext watch_ctx;
  auto reader = stub->Watch(&watch_ctx, v1::WatchRequest());
  v1::WatchResponse hello;
  ASSERT_TRUE(reader->Read(&hello));  // the stream is open
  grpc::Status waiting = Send(channel, Report("fs01", 2), absl::Seconds(2));
  EXPECT_EQ(waiting.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << waiting.error_message();
  watch_ctx.TryCancel();
  reader->Finish();
  grpc::Status after = Send(channel, Report("fs01", 3));
  EXPECT_TRUE(after.ok()) << after.error_message();
  started->reset();
}

// The binary under SIGTERM.
class CollectorProcess {
 public:
  CollectorProcess(const std::string& dir, const std::string& yaml) : dir_(dir) {
    std::ofstream(dir + "/collector.yaml") << yaml;
    const std::string bin = absl::StrCat(SMBFLEET_BINARY_DIR, "/collector/smbfleet-collector");
    std::vector<std::string> args = {bin, "--config", dir + "/collector.yaml", "--port_file",
                                     dir + "/port"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = dir + "/collector.log";
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = 0;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~CollectorProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The port once serving, 0 after `timeout`.
  int WaitForPort(absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      std::ifstream f(dir_ + "/port");
      int port = 0;
      if (f >> port && port > 0) return port;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return 0;
  }
  void Signal(int sig) { kill(pid_, sig); }
  // The exit code, or -1 when it has not exited within `timeout`.
  int WaitForExit(absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return -1;
  }
  std::string Log() {
    std::ifstream f(dir_ + "/collector.log");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  std::string dir_;
  pid_t pid_ = 0;
};

std::string Yaml(const std::string& pki, const std::string& dsn, const std::string& extra) {
  return absl::StrCat("listen: 127.0.0.1:0\ntls:\n  cert: ", pki, "/collector.pem\n  key: ", pki,
                      "/collector.key\n  client_ca: ", pki, "/ca.pem\ndatabase:\n  dsn: ", dsn,
                      "\n  pool_size: 2\n  acquire_timeout: 1s\n  connect_timeout: 2s\n", extra);
}

// SIGTERM during a burst: the reports in flight finish, later ones are answered UNAVAILABLE
// (the agent keeps them), the process exits 0 and every acked report is in the database.
TEST_F(CollectorFaultsTest, SigtermDuringABurstExitsZeroWithEveryAckedReportStored) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01 fs02 fs03 fs04");
  const std::string dir = smbfleet::testing::MakeTempDir("smbfleet-faults");
  CollectorProcess process(dir, Yaml(pki, pg_->dsn(), "shutdown_timeout: 10s\n"));
  const int port = process.WaitForPort(absl::Seconds(60));
  ASSERT_GT(port, 0) << process.Log();

  std::mutex mu;
  std::vector<std::string> acked;
  std::atomic<int> sent{0}, refused{0};
  std::atomic<bool> term_sent{false};
  std::vector<std::thread> agents;
  for (int a = 0; a < 4; ++a) {
    agents.emplace_back([&, a] {
      const std::string host = absl::StrCat("fs0", a + 1);
      auto channel = Channel(pki, "agent-" + host, port);
      for (int i = 0; i < 100'000; ++i) {
        v1::ReportRequest r = Report(host, a * 100'000 + i);
        ++sent;
        grpc::Status s = Send(channel, r, absl::Seconds(20));
        if (!s.ok()) {
          ++refused;
          if (term_sent) return;  // refused once stopping: the agent keeps it and retries later
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acked.push_back(r.report_id());
      }
    });
  }
  // A burst under way, then SIGTERM.
  const absl::Time burst_end = absl::Now() + absl::Seconds(30);
  while (absl::Now() < burst_end) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (acked.size() >= 200) break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Time term = absl::Now();
  term_sent = true;
  process.Signal(SIGTERM);
  const int code = process.WaitForExit(absl::Seconds(30));
  const absl::Duration exit_took = absl::Now() - term;
  for (auto& t : agents) t.join();
  EXPECT_EQ(code, 0) << process.Log();
  EXPECT_THAT(process.Log(), HasSubstr("stopped"));

  std::vector<std::string> quoted;
  for (const std::string& id : acked) quoted.push_back(absl::StrCat("'", id, "'"));
  ASSERT_FALSE(quoted.empty());
  const std::string stored = smbfleet::testing::QueryValue(
      pg_->dsn(), absl::StrCat("SELECT count(*) FROM reports WHERE report_id IN (",
                               absl::StrJoin(quoted, ","), ")"));
  EXPECT_EQ(stored, absl::StrCat(acked.size())) << "an acked report is missing";
  std::printf(
      "{\"test\":\"sigterm_burst\",\"sent\":%d,\"acked\":%zu,\"refused\":%d,"
      "\"acked_stored\":%s,\"exit_code\":%d,\"exit_seconds\":%.2f}\n",
      sent.load(), acked.size(), refused.load(), stored.c_str(), code, Seconds(exit_took));
}

// Before: SIGTERM with the database frozen never exited (shutdown waited for every task, each
// parked on the database). Now the queue is dropped at the deadline, the connections of the
// calls still running are cut, and the process exits 0; no call was acked.
TEST_F(CollectorFaultsTest, SigtermExitsWithinTheBoundWhenTheDatabaseIsStuck) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  const std::string dir = smbfleet::testing::MakeTempDir("smbfleet-faults");
  CollectorProcess process(dir, Yaml(pki, pg_->dsn(), "shutdown_timeout: 2s\n"));
  const int port = process.WaitForPort(absl::Seconds(60));
  ASSERT_GT(port, 0) << process.Log();
  auto channel = Channel(pki, "agent-fs01", port);
  ASSERT_TRUE(Send(channel, Report("fs01", 1)).ok());

  pg_->Freeze();
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      return Send(channel, Report("fs01", 10 + i), absl::Seconds(60));
    }));
  }
  absl::SleepFor(absl::Milliseconds(500));  // the calls are queued or parked on the database
  const absl::Time term = absl::Now();
  process.Signal(SIGTERM);
  const int code = process.WaitForExit(absl::Seconds(40));
  const absl::Duration exit_took = absl::Now() - term;
  pg_->Thaw();
  int ok = 0;
  for (auto& call : calls) ok += call.get().ok();
  EXPECT_NE(code, -1) << "still running 40 s after SIGTERM\n" << process.Log();
  EXPECT_EQ(code, 0) << process.Log();
  EXPECT_EQ(ok, 0);
  EXPECT_THAT(process.Log(), HasSubstr("database connection(s) cut"));
  std::printf(
      "{\"test\":\"sigterm_database_stuck\",\"exit_code\":%d,\"exit_seconds\":%.2f,"
      "\"calls\":8,\"acked\":%d}\n",
      code, Seconds(exit_took), ok);
}

// Before: SIGTERM while a rollout scheduler tick was parked on a frozen database waited for the
// tick (the background jobs were stopped before the deadline applied), and the watchdog ended
// the process with 1 at shutdown_timeout + 5 s. Now the jobs stop under the same deadline as
// the calls, their connections are cut with the calls', and the process exits 0.
TEST_F(CollectorFaultsTest, SigtermExitsZeroWhileTheSchedulerWaitsOnAStuckDatabase) {
  const std::string pki = smbfleet::testing::MakeCertificates("fs01");
  const std::string dir = smbfleet::testing::MakeTempDir("smbfleet-faults");
  CollectorProcess process(
      dir, Yaml(pki, pg_->dsn(), "shutdown_timeout: 2s\nchanges:\n  tick: 100ms\n"));
  const int port = process.WaitForPort(absl::Seconds(60));
  ASSERT_GT(port, 0) << process.Log();

  pg_->Freeze();
  // A tick every 100 ms, each reading the live changes: one is parked on the database now.
  absl::SleepFor(absl::Milliseconds(1500));
  const absl::Time term = absl::Now();
  process.Signal(SIGTERM);
  const int code = process.WaitForExit(absl::Seconds(40));
  const absl::Duration exit_took = absl::Now() - term;
  pg_->Thaw();
  EXPECT_EQ(code, 0) << process.Log();
  EXPECT_THAT(process.Log(), HasSubstr("background jobs still running at the deadline"));
  EXPECT_THAT(process.Log(), HasSubstr("database connection(s) cut"));
  EXPECT_THAT(process.Log(), HasSubstr("stopped"));
  std::printf("{\"test\":\"sigterm_scheduler_stuck\",\"exit_code\":%d,\"exit_seconds\":%.2f}\n",
              code, Seconds(exit_took));
}

}  // namespace
}  // namespace smbfleet::collector
