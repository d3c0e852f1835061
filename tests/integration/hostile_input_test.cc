// Hostile input against the real collector over real mutual TLS and a real PostgreSQL: messages
// over the size limit, huge repeated fields, nesting past protobuf's recursion limit, strings
// that are not UTF-8, SQL metacharacters, and newlines meant to forge log lines. Each is refused
// (or, for the metacharacters, stored verbatim) and a refusal leaves every table as it was.
#include <algorithm>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "common/logging.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using ::smbfleet::testing::CreateTestDatabase;
using ::smbfleet::testing::QueryValue;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kMaxReportBytes = 1 << 20;

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = smbfleet::testing::MakeCertificates("fs01");
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    auto store = NewPgStore(dsn_, 2);
    ASSERT_TRUE(store.ok()) << store.status();
    CollectorConfig config;
    config.listen = "127.0.0.1:0";
    config.max_report_bytes = kMaxReportBytes;
    config.keepalive_interval = std::chrono::seconds(30);
    auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
    ASSERT_TRUE(tls.ok()) << tls.status();
    auto c = Collector::Start(config, *tls, *std::move(store));
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = *std::move(c);
    agent_ = Channel("agent-fs01");
    admin_ = v1::AdminService::NewStub(Channel("operator-admin"));
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& who) {
    auto m = LoadTls({pki_ + "/" + who + ".pem", pki_ + "/" + who + ".key", pki_ + "/ca.pem"});
    EXPECT_TRUE(m.ok()) << m.status();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    // The client may send more than the collector accepts: the limit under test is the server's.
    args.SetMaxSendMessageSize(64 << 20);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", collector_->port()),
                                     MutualTlsChannelCredentials(*m), args);
  }

  static v1::ReportRequest Report(const std::string& id) {
    v1::ReportRequest r;
    r.set_report_id(id);
    r.mutable_posture()->mutable_host()->set_hostname("fs01");
    r.mutable_posture()->mutable_server()->set_smb1_enabled(false);
    return r;
  }

  grpc::Status Send(const v1::ReportRequest& r, v1::ReportResponse* resp = nullptr) {
    v1::ReportResponse ignored;
    auto stub = v1::AgentService::NewStub(agent_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub->Report(&ctx, r, resp != nullptr ? resp : &ignored);
  }

  // The bytes go out as they are: protobuf's own serializer would not build some of these.
  grpc::Status SendRaw(const std::string& bytes) {
    grpc::GenericStub stub(agent_);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, "/smbfleet.v1.AgentService/Report", grpc::StubOptions(), &request,
                   &response, [&done](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  // Every row the ingest and change paths write, as one digest per table.
  std::string Snapshot() {
    std::string out;
    for (const char* table : {"hosts", "reports", "postures", "host_state", "host_shares",
                              "host_sessions", "changes", "change_hosts", "audit_log"}) {
      absl::StrAppend(&out, table, "=",
                      QueryValue(dsn_, absl::StrCat("SELECT count(*) || ':' || coalesce(md5("
                                                    "string_agg(t::text, '|' ORDER BY t::text)), "
                                                    "'') FROM ",
                                                    table, " t")),
                      "\n");
    }
    return out;
  }

  v1::GetHostResponse GetHost(const std::string& name) {
    grpc::ClientContext ctx;
    v1::GetHostRequest req;
    req.set_name(name);
    v1::GetHostResponse host;
    grpc::Status s = admin_->GetHost(&ctx, req, &host);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return host;
  }

  std::string pki_, dsn_;
  std::unique_ptr<Collector> collector_;
  std::shared_ptr<grpc::Channel> agent_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(HostileInputTest, OversizedReportIsRefusedAndNothingIsStored) {
  ASSERT_TRUE(Send(Report("00000000-0000-4000-8000-000000000001")).ok());
  const std::string before = Snapshot();
  auto r = Report("00000000-0000-4000-8000-000000000002");
  for (int i = 0; i < 200; ++i) r.mutable_posture()->add_shares()->set_path(std::string(8000, 'p'));
  ASSERT_GT(r.ByteSizeLong(), kMaxReportBytes);
  grpc::Status s = Send(r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("larger than max"));
  EXPECT_EQ(Snapshot(), before);
}

// Under the byte limit but over the per-field limits: the error names the field and its limit.
TEST_F(HostileInputTest, HugeRepeatedFieldsNameTheFieldAndStoreNothing) {
  ASSERT_TRUE(Send(Report("00000000-0000-4000-8000-000000000003")).ok());
  const std::string before = Snapshot();
  struct Case {
    std::function<void(v1::Posture*)> fill;
    const char* field;
  };
  const Case cases[] = {
      {[](v1::Posture* p) {
         for (int i = 0; i < 10'001; ++i) p->add_shares()->set_name(absl::StrCat("s", i));
       },
       "posture.shares: 10001 entries, limit 10000"},
      {[](v1::Posture* p) {
         for (int i = 0; i < 65; ++i) (*p->mutable_host()->mutable_labels())[absl::StrCat(i)] = "";
       },
       "posture.host.labels: 65 entries, limit 64"},
      {[](v1::Posture* p) { p->mutable_host()->set_os_name(std::string(5000, 'o')); },
       "posture.host.osName: 5000 bytes, limit 4096"},
  };
  int n = 10;
  for (const Case& c : cases) {
    auto r = Report(absl::StrCat("00000000-0000-4000-8000-0000000000", n++));
    c.fill(r.mutable_posture());
    ASSERT_LE(r.ByteSizeLong(), kMaxReportBytes) << c.field;
    grpc::Status s = Send(r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_THAT(s.error_message(), HasSubstr(c.field));
  }
  EXPECT_EQ(Snapshot(), before);
}

// 200 nested groups in an unknown field: past protobuf's recursion limit (100), so the request
// does not parse; nothing reaches the store.
TEST_F(HostileInputTest, NestingPastTheRecursionLimitIsRefused) {
  const std::string before = Snapshot();
  std::string bytes = Report("00000000-0000-4000-8000-000000000020").SerializeAsString();
  const std::string start_group = "\xa3\x06";  // field 100, wire type 3 (start group)
  const std::string end_group = "\xa4\x06";    // field 100, wire type 4 (end group)
  for (int i = 0; i < 200; ++i) bytes += start_group;
  for (int i = 0; i < 200; ++i) bytes += end_group;
  // gRPC's callback server answers a request that does not parse with UNIMPLEMENTED and no
  // message; protobuf names the field in the collector's log only.
  grpc::Status s = SendRaw(bytes);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(Snapshot(), before);
  // The same nesting at a depth protobuf accepts is only unknown data: the report is stored.
  std::string shallow = Report("00000000-0000-4000-8000-000000000021").SerializeAsString();
  for (int i = 0; i < 10; ++i) shallow += start_group;
  for (int i = 0; i < 10; ++i) shallow += end_group;
  EXPECT_TRUE(SendRaw(shallow).ok());
}

// proto3 strings must be UTF-8: a share name, a label and the report id that are not do not
// parse, and nothing is stored.
TEST_F(HostileInputTest, InvalidUtf8InStringFieldsIsRefused) {
  ASSERT_TRUE(Send(Report("00000000-0000-4000-8000-000000000030")).ok());
  const std::string before = Snapshot();
  const std::string marker = "MARKER01";
  const std::string invalid = "\xff\xfe\xc3\x28\xed\xa0\x80\x80";  // same length as the marker
  ASSERT_EQ(marker.size(), invalid.size());
  std::vector<v1::ReportRequest> reports(3, Report("00000000-0000-4000-8000-000000000031"));
  reports[0].mutable_posture()->add_shares()->set_name(marker);
  (*reports[1].mutable_posture()->mutable_host()->mutable_labels())["site"] = marker;
  reports[2].mutable_posture()->mutable_host()->set_agent_version(marker);
  for (const auto& r : reports) {
    std::string bytes = r.SerializeAsString();
    size_t at = bytes.find(marker);
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, marker.size(), invalid);
    grpc::Status s = SendRaw(bytes);
    EXPECT_FALSE(s.ok()) << r.ShortDebugString();
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  EXPECT_EQ(Snapshot(), before);
}

// Quotes, comment markers, LIKE wildcards and placeholders are data: stored and read back
// exactly, with no other row touched.
TEST_F(HostileInputTest, SqlMetacharactersAreStoredAndReadBackVerbatim) {
  const std::vector<std::string> hostile = {
      "x'; DROP TABLE hosts; --",          "o'brien \"quoted\" \\backslash\\",
      "100%_ off $1 $$body$$ :name ?",     "'); DELETE FROM reports WHERE ('1'='1",
      "/* comment */ E'\\x41' U&'\\0041'",
  };
  auto r = Report("00000000-0000-4000-8000-000000000040");
  auto* labels = r.mutable_posture()->mutable_host()->mutable_labels();
  for (size_t i = 0; i < hostile.size(); ++i) {
    r.mutable_posture()->add_shares()->set_name(hostile[i]);
    (*labels)[hostile[i]] = hostile[(i + 1) % hostile.size()];
  }
  r.mutable_posture()->mutable_host()->set_os_name(hostile[0]);
  ASSERT_TRUE(Send(r).ok());

  v1::GetHostResponse host = GetHost("fs01");
  std::vector<std::string> shares;
  for (const auto& s : host.posture().shares()) shares.push_back(s.name());
  EXPECT_THAT(shares, ::testing::UnorderedElementsAreArray(hostile));
  EXPECT_EQ(host.posture().host().labels().size(), hostile.size());
  for (size_t i = 0; i < hostile.size(); ++i) {
    auto it = host.posture().host().labels().find(hostile[i]);
    ASSERT_NE(it, host.posture().host().labels().end()) << hostile[i];
    EXPECT_EQ(it->second, hostile[(i + 1) % hostile.size()]);
  }
  EXPECT_EQ(host.posture().host().os_name(), hostile[0]);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM hosts"), "1");
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM reports"), "1");

  // A change's reason, through the proposal and back.
  v1::ProposeChangeRequest propose;
  propose.add_hosts("fs01");
  auto* setting = propose.add_settings();
  setting->set_setting("server.requireSigning");
  setting->set_value("true");
  propose.set_reason(hostile[3]);
  v1::ProposeChangeResponse proposed;
  {
    grpc::ClientContext ctx;
    grpc::Status s = admin_->ProposeChange(&ctx, propose, &proposed);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  v1::GetChangeRequest get;
  get.set_id(proposed.change().id());
  v1::GetChangeResponse shown;
  grpc::ClientContext ctx;
  ASSERT_TRUE(admin_->GetChange(&ctx, get, &shown).ok());
  EXPECT_EQ(shown.change().reason(), hostile[3]);
  EXPECT_EQ(QueryValue(dsn_, "SELECT count(*) FROM changes"), "1");
}

// A newline in an agent version, a report id or a label key would start a forged log line; the
// collector's log shows each as one escaped, quoted field.
TEST_F(HostileInputTest, ForgedLogLinesStayInsideTheirField) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  sink->set_pattern("%l %v");
  auto log = Logger("collector");
  log->sinks().push_back(sink);
  const auto level = log->level();
  log->set_level(spdlog::level::debug);

  const std::string forged = "\n2026-12-03T10:00:00.000+0000 info [collector] FORGED";
  auto stored = Report("00000000-0000-4000-8000-000000000050");
  stored.mutable_posture()->mutable_host()->set_agent_version("1.0" + forged);
  EXPECT_TRUE(Send(stored).ok());
  auto refused = Report("not-a-uuid" + forged);
  // Over the key limit, with the newline inside the part the error quotes.
  (*refused.mutable_posture()->mutable_host()->mutable_labels())["k" + forged +
                                                                 std::string(100, 'x')] = "";
  EXPECT_EQ(Send(refused).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  auto stub = v1::AgentService::NewStub(agent_);
  grpc::ClientContext watch_ctx;
  v1::WatchRequest watch;
  watch.set_agent_version("2.0" + forged);
  auto reader = stub->Watch(&watch_ctx, watch);
  v1::WatchResponse greeting;
  ASSERT_TRUE(reader->Read(&greeting));
  watch_ctx.TryCancel();
  reader->Finish();

  log->flush();
  log->set_level(level);
  auto& sinks = log->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  const std::string text = captured.str();
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    EXPECT_FALSE(absl::StartsWith(line, "2026-12-03T10:00:00")) << line;
  }
  const std::string escaped = "\\x0a2026-12-03T10:00:00.000+0000 info [collector] FORGED";
  EXPECT_THAT(text, HasSubstr("(agent \"1.0" + escaped + "\")"));
  EXPECT_THAT(text, HasSubstr("(agent \"2.0" + escaped + "\")"));
  EXPECT_THAT(text, HasSubstr("refused: \"report rejected: reportId: 'not-a-uuid\\x0a2026"));
  EXPECT_THAT(text, HasSubstr("posture.host.labels[k\\x0a2026-12-03T10:00:00.000+0000"));
}

}  // namespace
}  // namespace smbfleet::collector
