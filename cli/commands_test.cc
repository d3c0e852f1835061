#include "cli/commands.h"

#include <memory>
#include <mutex>
#include <sstream>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The collector's side of the calls, scripted: each test sets the answers it needs.
class FakeAdmin final : public v1::AdminService::Service {
 public:
  grpc::Status ProposeChange(grpc::ServerContext*, const v1::ProposeChangeRequest* req,
                             v1::ProposeChangeResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    proposed_ = *req;
    if (!answer_.ok()) return answer_;
    resp->mutable_change()->set_id("c-42");
    resp->mutable_change()->set_approvals_required(2);
    for (const auto& h : req->hosts()) resp->mutable_change()->add_hosts()->set_host(h);
    resp->add_skipped("fs09: compliant");
    return grpc::Status::OK;
  }
  grpc::Status ApproveChange(grpc::ServerContext*, const v1::ApproveChangeRequest* req,
                             v1::ApproveChangeResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!answer_.ok()) return answer_;
    resp->mutable_change()->set_id(req->id());
    resp->mutable_change()->set_state(v1::CHANGE_STATE_PROPOSED);
    resp->set_approvals(1);
    resp->set_approvals_required(2);
    return grpc::Status::OK;
  }
  // Answers in order; the last one repeats.
  grpc::Status GetChange(grpc::ServerContext*, const v1::GetChangeRequest* req,
                         v1::GetChangeResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!answer_.ok()) return answer_;
    if (polls_.empty()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no change " + req->id());
    *resp->mutable_change() = polls_[std::min(gets_, polls_.size() - 1)];
    ++gets_;
    return grpc::Status::OK;
  }
  // Pages of two entries after `after_seq`, as a collector with a small default page would.
  grpc::Status ListAudit(grpc::ServerContext*, const v1::ListAuditRequest* req,
                         v1::ListAuditResponse* resp) override {
    for (int64_t seq = req->after_seq() + 1; seq <= 5 && resp->entries_size() < 2; ++seq) {
      auto* e = resp->add_entries();
      e->set_seq(seq);
      e->set_action(seq == 1 ? "proposed" : "approved");
      e->set_change_id(req->change_id());
    }
    return grpc::Status::OK;
  }

  void Answer(grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(s);
  }
  void Polls(std::vector<v1::Change> polls) {
    std::lock_guard<std::mutex> lock(mu_);
    polls_ = std::move(polls);
  }
  v1::ProposeChangeRequest proposed() {
    std::lock_guard<std::mutex> lock(mu_);
    return proposed_;
  }

 private:
  std::mutex mu_;
  grpc::Status answer_;
  std::vector<v1::Change> polls_;
  size_t gets_ = 0;
  v1::ProposeChangeRequest proposed_;
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&admin_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::AdminService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { server_->Shutdown(); }

  struct Result {
    int rc;
    std::string out, err;
  };
  Result Run(const std::vector<std::string>& args) {
    auto inv = ParseCommandLine(args, absl::Now());
    EXPECT_TRUE(inv.ok()) << inv.status();
    if (!inv.ok()) return {-1, "", ""};
    std::ostringstream out, err;
    int rc = Execute(*inv, *stub_, out, err);
    return {rc, out.str(), err.str()};
  }

  FakeAdmin admin_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AdminService::Stub> stub_;
};

v1::Change WithHosts(v1::ChangeState state, std::vector<v1::HostChangeState> hosts) {
  v1::Change c;
  c.set_id("c-42");
  c.set_state(state);
  for (size_t i = 0; i < hosts.size(); ++i) {
    auto* h = c.add_hosts();
    h->set_host(absl::StrCat("fs0", i + 1));
    h->set_state(hosts[i]);
  }
  return c;
}

TEST_F(CommandsTest, ProposeSendsTheHostsAndPrintsTheIdFirst) {
  Result r = Run({"changes", "propose", "--host", "fs01", "fs02", "--reason", "encrypt"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("c-42\n"));
  EXPECT_THAT(r.out, HasSubstr("skipped: fs09: compliant"));
  EXPECT_THAT(admin_.proposed().hosts(), ElementsAre("fs01", "fs02"));
  EXPECT_EQ(admin_.proposed().reason(), "encrypt");

  Result json = Run({"changes", "propose", "--host", "fs01", "--format=json"});
  EXPECT_EQ(json.rc, 0) << json.err;
  EXPECT_THAT(json.out, StartsWith("{"));
  EXPECT_THAT(json.out, HasSubstr("\"id\": \"c-42\""));
  EXPECT_THAT(json.out, Not(HasSubstr("skipped")));  // the Change alone
}

TEST_F(CommandsTest, TheCollectorsRefusalsBecomeTheContractsExitCodes) {
  struct Case {
    grpc::StatusCode code;
    int rc;
  };
  for (const Case& c : std::vector<Case>{{grpc::StatusCode::NOT_FOUND, 3},
                                         {grpc::StatusCode::PERMISSION_DENIED, 4},
                                         {grpc::StatusCode::FAILED_PRECONDITION, 5},
                                         {grpc::StatusCode::INVALID_ARGUMENT, 1}}) {
    admin_.Answer(grpc::Status(c.code, "c-42: refused because \x1b[2J"));
    Result r = Run({"changes", "approve", "c-42"});
    EXPECT_EQ(r.rc, c.rc) << static_cast<int>(c.code);
    EXPECT_THAT(r.err, HasSubstr("approving change c-42: c-42: refused because \\x1b[2J"));
    EXPECT_THAT(r.err, Not(HasSubstr("\x1b")));
  }
  admin_.Answer(grpc::Status::OK);
  Result ok = Run({"changes", "approve", "c-42"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("c-42: approval 1 of 2 recorded; PROPOSED (needs 1 more)"));
}

// The collector's message quotes a host's share name: a right-to-left mark or a C1 CSI in it is
// printed escaped, not obeyed by the terminal.
TEST_F(CommandsTest, TheCollectorsMessageIsPrintedEscaped) {
  admin_.Answer(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "share 'pay\xe2\x80\x8froll\xc2\x9b"
                             "2J' is not managed"));
  Result r = Run({"changes", "approve", "c-42"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("share 'pay\\u200froll\\xc2\\x9b2J' is not managed"));
  EXPECT_THAT(r.err, Not(HasSubstr("\xe2\x80\x8f")));
  EXPECT_THAT(r.err, Not(HasSubstr("\xc2\x9b")));
}

TEST_F(CommandsTest, WatchExitsZeroWhenEveryHostApplied) {
  admin_.Polls({WithHosts(v1::CHANGE_STATE_ROLLING_OUT, {v1::HOST_CHANGE_STATE_DISPATCHED}),
                WithHosts(v1::CHANGE_STATE_ROLLING_OUT, {v1::HOST_CHANGE_STATE_DISPATCHED}),
                WithHosts(v1::CHANGE_STATE_COMPLETED, {v1::HOST_CHANGE_STATE_APPLIED})});
  Result r = Run({"changes", "watch", "c-42", "--interval", "10ms", "--timeout", "30s"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("change  ROLLING_OUT\n"));
  EXPECT_THAT(r.out, HasSubstr("fs01  DISPATCHED\n"));
  EXPECT_THAT(r.out, HasSubstr("change  COMPLETED\n"));
  EXPECT_THAT(r.out, HasSubstr("fs01  APPLIED\n"));
  // The unchanged second poll printed nothing.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;
}

TEST_F(CommandsTest, WatchFailsWhenTheChangeEndsOtherwise) {
  admin_.Polls({WithHosts(v1::CHANGE_STATE_ROLLED_BACK, {v1::HOST_CHANGE_STATE_ROLLED_BACK})});
  Result r = Run({"changes", "watch", "c-42", "--interval", "10ms"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("ended ROLLED_BACK"));
}

TEST_F(CommandsTest, WatchKeepsWatchingAHaltedChangeUntilTheTimeout) {
  v1::Change halted = WithHosts(v1::CHANGE_STATE_HALTED, {v1::HOST_CHANGE_STATE_FAILED});
  halted.set_halt_reason("fs01 acked FAILED");
  admin_.Polls({halted});
  Result r = Run({"changes", "watch", "c-42", "--interval", "10ms", "--timeout", "100ms"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.out, HasSubstr("change  HALTED  fs01 acked FAILED"));
  EXPECT_THAT(r.err, HasSubstr("--timeout"));
}

TEST_F(CommandsTest, WatchOfAnUnknownChangeIsNotFound) {
  Result r = Run({"changes", "watch", "c-404", "--interval", "10ms"});
  EXPECT_EQ(r.rc, 3);
  EXPECT_THAT(r.err, HasSubstr("no change c-404"));
}

TEST_F(CommandsTest, AuditReadsEveryPage) {
  Result r = Run({"audit", "--change", "c-42", "--format=json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  for (int seq = 1; seq <= 5; ++seq) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\"seq\": \"", seq, "\""))) << r.out;
  }
  Result limited = Run({"audit", "--change", "c-42", "--limit", "3"});
  EXPECT_EQ(limited.rc, 0) << limited.err;
  EXPECT_THAT(limited.out, HasSubstr("\n3 "));
  EXPECT_THAT(limited.out, Not(HasSubstr("\n4 ")));
}

}  // namespace
}  // namespace smbfleet::cli
