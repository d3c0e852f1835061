// Approver sets over real mutual TLS and a real PostgreSQL, with two collector replicas on one
// database: a published set reaches the Watch stream of an agent connected to the replica that
// took it at once, and one connected to the other replica within its poll; a stream that opens
// later gets the set first; a serial not above the latest is refused.
#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/server/collector.h"
#include "collector/store/postgres/pg_store.h"
#include "common/tls.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/admin.grpc.pb.h"
#include "smbfleet/v1/agent.grpc.pb.h"
#include "tests/testing/pg_fixture.h"

namespace smbfleet::collector {
namespace {

using ::smbfleet::testing::CreateTestDatabase;
using ::testing::HasSubstr;

smbfleet::v1::SignedApproverSet Set(uint64_t serial) {
  smbfleet::v1::ApproverSet set;
  set.set_serial(serial);
  auto* k = set.add_approvers();
  k->set_name("ann");
  k->set_public_key(std::string(32, 'a'));
  smbfleet::v1::SignedApproverSet s;
  s.set_approver_set(set.SerializeAsString());
  s.set_root_key_id("00112233aabbccdd");
  s.set_signature(std::string(64, 's'));  // the collector cannot and does not check it
  return s;
}

class ApproverSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SMBFLEET_REQUIRE_PG();
    pki_ = smbfleet::testing::MakeCertificates("fs01 fs02");
    dsn_ = CreateTestDatabase();
    ASSERT_TRUE(ApplyMigrations(dsn_, BuiltinMigrations()).ok());
    for (auto* c : {&a_, &b_}) {
      auto store = NewPgStore(dsn_, 2);
      ASSERT_TRUE(store.ok()) << store.status();
      CollectorConfig config;
      config.listen = "127.0.0.1:0";
      config.keepalive_interval = std::chrono::seconds(30);
      config.approver_set_poll = std::chrono::milliseconds(200);
      auto tls = LoadTls({pki_ + "/collector.pem", pki_ + "/collector.key", pki_ + "/ca.pem"});
      ASSERT_TRUE(tls.ok()) << tls.status();
      auto started = Collector::Start(config, *tls, *std::move(store));
      ASSERT_TRUE(started.ok()) << started.status();
      *c = *std::move(started);
    }
  }

  std::shared_ptr<grpc::Channel> Channel(Collector* c, const std::string& who) {
    auto m = LoadTls({pki_ + "/" + who + ".pem", pki_ + "/" + who + ".key", pki_ + "/ca.pem"});
    EXPECT_TRUE(m.ok()) << m.status();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", c->port()),
                                     MutualTlsChannelCredentials(*m), args);
  }

  grpc::Status Publish(Collector* c, const smbfleet::v1::SignedApproverSet& set,
                       smbfleet::v1::PublishApproverSetResponse* out) {
    auto admin = smbfleet::v1::AdminService::NewStub(Channel(c, "operator-admin"));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    smbfleet::v1::PublishApproverSetRequest req;
    *req.mutable_set() = set;
    return admin->PublishApproverSet(&ctx, req, out);
  }

  // An agent's Watch stream, read up to its greeting.
  struct Watcher {
    std::unique_ptr<smbfleet::v1::AgentService::Stub> stub;
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<smbfleet::v1::WatchResponse>> reader;
    // The next message that is not a keepalive.
    bool ReadNonKeepalive(smbfleet::v1::WatchResponse* m) {
      while (reader->Read(m)) {
        if (!m->has_keepalive()) return true;
      }
      return false;
    }
    ~Watcher() {
      ctx.TryCancel();
      reader->Finish();
    }
  };
  std::unique_ptr<Watcher> Watch(Collector* c, const std::string& who) {
    auto w = std::make_unique<Watcher>();
    w->stub = smbfleet::v1::AgentService::NewStub(Channel(c, who));
    w->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    smbfleet::v1::WatchRequest req;
    req.set_agent_version("test");
    w->reader = w->stub->Watch(&w->ctx, req);
    smbfleet::v1::WatchResponse greeting;
    EXPECT_TRUE(w->reader->Read(&greeting));
    EXPECT_TRUE(greeting.has_keepalive());
    return w;
  }

  std::string pki_, dsn_;
  std::unique_ptr<Collector> a_, b_;
};

TEST_F(ApproverSetTest, PublishedSetReachesConnectedAgentsOnEveryReplica) {
  auto on_a = Watch(a_.get(), "agent-fs01");
  auto on_b = Watch(b_.get(), "agent-fs02");
  smbfleet::v1::PublishApproverSetResponse published;
  grpc::Status s = Publish(a_.get(), Set(1), &published);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(published.serial(), 1u);
  EXPECT_EQ(published.agents_sent(), 1u);

  smbfleet::v1::WatchResponse m;
  ASSERT_TRUE(on_a->ReadNonKeepalive(&m));
  ASSERT_TRUE(m.has_approver_set());
  EXPECT_EQ(m.approver_set().SerializeAsString(), Set(1).SerializeAsString());
  ASSERT_TRUE(on_b->ReadNonKeepalive(&m));  // through B's poll of the database
  ASSERT_TRUE(m.has_approver_set());
  EXPECT_EQ(m.approver_set().SerializeAsString(), Set(1).SerializeAsString());

  // A stream opened later gets the set right after the greeting, before any order.
  auto later = Watch(b_.get(), "agent-fs01");
  ASSERT_TRUE(later->reader->Read(&m));
  ASSERT_TRUE(m.has_approver_set());
  EXPECT_EQ(m.approver_set().SerializeAsString(), Set(1).SerializeAsString());

  auto admin = smbfleet::v1::AdminService::NewStub(Channel(b_.get(), "operator-admin"));
  grpc::ClientContext ctx;
  smbfleet::v1::GetApproverSetResponse got;
  ASSERT_TRUE(admin->GetApproverSet(&ctx, {}, &got).ok());
  EXPECT_EQ(got.set().SerializeAsString(), Set(1).SerializeAsString());
}

TEST_F(ApproverSetTest, SerialNotAboveTheLatestIsRefusedOnAnyReplica) {
  smbfleet::v1::PublishApproverSetResponse published;
  ASSERT_TRUE(Publish(a_.get(), Set(4), &published).ok());
  grpc::Status s = Publish(b_.get(), Set(4), &published);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("not greater than the published 4"));
  smbfleet::v1::SignedApproverSet garbage = Set(5);
  garbage.set_approver_set("\xff");
  s = Publish(b_.get(), garbage, &published);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(Publish(b_.get(), Set(5), &published).ok());
}

}  // namespace
}  // namespace smbfleet::collector
