#include "cli/commands.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/admin_call.h"
#include "cli/commands_approvals.h"
#include "cli/run.h"
#include "common/approval_signing.h"
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
  grpc::Status ProposeChange(grpc::ServerContext* context, const v1::ProposeChangeRequest* req,
                             v1::ProposeChangeResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    proposed_ = *req;
    deadline_left_ = context->deadline() - std::chrono::system_clock::now();
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
    approved_.push_back(*req);
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
    // A change to be approved: its payload, whatever the other calls answer.
    auto payload = payloads_.find(req->id());
    if (payload != payloads_.end()) {
      resp->mutable_change()->set_id(req->id());
      resp->mutable_change()->set_state(v1::CHANGE_STATE_PROPOSED);
      resp->set_approval_payload(payload->second);
      for (const auto& h : approval_hosts_[req->id()]) *resp->add_approval_hosts() = h;
      return grpc::Status::OK;
    }
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

  // One class with a factor; a save answers it with id 3 and who saved it.
  static v1::CostModelCalibration Calibration() {
    v1::CostModelCalibration c;
    c.mutable_since()->set_seconds(1'800'000'000);
    c.set_input_count(5);
    auto* g = c.add_groups();
    g->set_platform("samba");
    g->set_protection_before("signing AES_128_GMAC");
    g->set_protection_after("encryption AES_128_GCM");
    g->set_changes(5);
    g->set_predicted_cpu_change_points(2.5);
    g->set_measured_cpu_change_points(3.1);
    g->set_cpu_change_points_error(0.6);
    g->set_predicted_cpu_ratio(1.3);
    g->set_measured_cpu_per_byte_ratio(1.46);
    g->set_suggested_cpu_per_byte_factor(1.12);
    g->set_suggestion("x1.12 (5 changes)");
    return c;
  }
  grpc::Status CostModelCalibration(grpc::ServerContext*,
                                    const v1::CostModelCalibrationRequest* req,
                                    v1::CostModelCalibrationResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    calibration_since_ = req->has_since() ? req->since().seconds() : -1;
    *resp->mutable_calibration() = Calibration();
    return grpc::Status::OK;
  }
  grpc::Status SaveCostModelCalibration(grpc::ServerContext*,
                                        const v1::SaveCostModelCalibrationRequest* req,
                                        v1::SaveCostModelCalibrationResponse* resp) override {
    std::lock_guard<std::mutex> lock(mu_);
    calibration_since_ = req->has_since() ? req->since().seconds() : -1;
    *resp->mutable_calibration() = Calibration();
    resp->mutable_calibration()->set_id(3);
    resp->mutable_calibration()->set_saved_by("carol");
    return grpc::Status::OK;
  }
  grpc::Status ListCostModelCalibrations(grpc::ServerContext*,
                                         const v1::ListCostModelCalibrationsRequest*,
                                         v1::ListCostModelCalibrationsResponse* resp) override {
    for (int64_t id : {3, 2}) {
      auto* c = resp->add_calibrations();
      *c = Calibration();
      c->set_id(id);
      c->set_saved_by("carol");
    }
    return grpc::Status::OK;
  }
  int64_t calibration_since() {
    std::lock_guard<std::mutex> lock(mu_);
    return calibration_since_;
  }

  grpc::Status RollbackChange(grpc::ServerContext*, const v1::ChangeActionRequest* req,
                              v1::ChangeActionResponse* resp) override {
    resp->mutable_change()->set_id(req->id());
    resp->mutable_change()->set_state(v1::CHANGE_STATE_ROLLED_BACK);
    resp->mutable_rollback()->set_id("rb-7");
    resp->mutable_rollback()->set_state(v1::CHANGE_STATE_PROPOSED);
    return grpc::Status::OK;
  }
  grpc::Status RegisterApproverKey(grpc::ServerContext*, const v1::RegisterApproverKeyRequest* req,
                                   v1::RegisterApproverKeyResponse* resp) override {
    resp->mutable_key()->set_name(req->name());
    resp->mutable_key()->set_key_id(KeyId(req->public_key()));
    resp->mutable_key()->set_public_key(req->public_key());
    return grpc::Status::OK;
  }

  void Payload(const std::string& id, std::string payload,
               std::vector<v1::HostOrder> approval_hosts = {}) {
    std::lock_guard<std::mutex> lock(mu_);
    payloads_[id] = std::move(payload);
    approval_hosts_[id] = std::move(approval_hosts);
  }
  std::vector<v1::ApproveChangeRequest> approved() {
    std::lock_guard<std::mutex> lock(mu_);
    return approved_;
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
  // How long the last proposal's caller still gave it when it arrived.
  std::chrono::system_clock::duration deadline_left() {
    std::lock_guard<std::mutex> lock(mu_);
    return deadline_left_;
  }

 private:
  std::mutex mu_;
  grpc::Status answer_;
  std::vector<v1::Change> polls_;
  size_t gets_ = 0;
  v1::ProposeChangeRequest proposed_;
  std::chrono::system_clock::duration deadline_left_{};
  std::map<std::string, std::string> payloads_;
  std::map<std::string, std::vector<v1::HostOrder>> approval_hosts_;
  std::vector<v1::ApproveChangeRequest> approved_;
  int64_t calibration_since_ = 0;  // -1: none was sent
};

// A host's order: server.requireSigning false -> true.
v1::HostOrder SigningOrder(const std::string& host) {
  v1::HostOrder h;
  h.set_host(host);
  auto* s = h.add_settings();
  s->set_setting("server.requireSigning");
  s->set_expected_current("false");
  s->set_value("true");
  return h;
}

// The fields every payload of change `id` shares.
v1::ApprovalPayload HeaderOf(const std::string& id) {
  v1::ApprovalPayload p;
  p.set_change_id(id);
  p.set_version(1);
  p.set_nonce("00112233445566778899aabbccddeeff");
  p.mutable_not_after()->set_seconds(1'900'000'000);
  p.set_proposed_by("pat");
  p.set_approvals_required(1);
  return p;
}

std::string Canonical(const v1::ApprovalPayload& p) {
  auto bytes = CanonicalApprovalPayload(p);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

// The canonical payload of a one-host change `id`.
std::string PayloadOf(const std::string& id, const std::string& rollback_of = "") {
  v1::ApprovalPayload p = HeaderOf(id);
  p.set_rollback_of(rollback_of);
  *p.add_hosts() = SigningOrder("fs01");
  return Canonical(p);
}

// Two hosts of a v2 change: their orders, fs02 first.
std::vector<v1::HostOrder> V2Hosts() { return {SigningOrder("fs02"), SigningOrder("fs01")}; }

// The v2 payload of change `id` committing to `hosts`.
std::string V2PayloadOf(const std::string& id, const std::vector<v1::HostOrder>& hosts) {
  auto tree = ApprovalHostTree::Build(hosts);
  EXPECT_TRUE(tree.ok()) << tree.status();
  if (!tree.ok()) return "";
  v1::ApprovalPayload p = HeaderOf(id);
  p.set_format(std::string(kApprovalFormatV2));
  p.set_hosts_root(tree->root());
  p.set_host_count(static_cast<uint32_t>(tree->size()));
  return Canonical(p);
}

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&admin_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    stub_ = v1::AdminService::NewStub(channel_);
  }
  void TearDown() override {
    server_->Shutdown();
    unsetenv("SMBFLEET_APPROVER_KEY");
  }

  // An approver key in a private file, the default for signing commands; the payload of c-42.
  Ed25519Key UseNewApproverKey() {
    auto key = GenerateEd25519Key();
    EXPECT_TRUE(key.ok());
    // ctest runs each test in its own process, several at once: the pid keeps their keys apart.
    key_path_ = ::testing::TempDir() + "/approver-" + std::to_string(getpid()) + "-" +
                std::to_string(++keys_) + ".key";
    std::ofstream(key_path_) << key->private_pem;
    setenv("SMBFLEET_APPROVER_KEY", key_path_.c_str(), 1);
    admin_.Payload("c-42", PayloadOf("c-42"));
    return *key;
  }

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
  std::string key_path_;
  int keys_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
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

TEST_F(CommandsTest, CallTimeoutIsTheDeadlineOfEachCall) {
  using Connected = absl::StatusOr<std::unique_ptr<v1::AdminService::StubInterface>>;
  StubFactory connect = [this](const GlobalFlags&) {
    return Connected(v1::AdminService::NewStub(channel_));
  };
  auto propose = [&](std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.end(), {"changes", "propose", "--host", "fs01"});
    EXPECT_EQ(RunCommandLine(args, connect, out, err), 0) << err.str();
    return std::chrono::duration_cast<std::chrono::seconds>(admin_.deadline_left()).count();
  };
  const int64_t longer = propose({"--call-timeout", "10m"});
  EXPECT_GT(longer, 500);
  EXPECT_LE(longer, 600);
  const int64_t by_default = propose({});
  EXPECT_GT(by_default, 20);
  EXPECT_LE(by_default, 30);
}

TEST_F(CommandsTest, TheCollectorsRefusalsBecomeTheContractsExitCodes) {
  UseNewApproverKey();
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
  UseNewApproverKey();
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

TEST_F(CommandsTest, CalibrationShowsOneRowPerClassAndSavesAndListsHistory) {
  Result r = Run({"changes", "calibration"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(admin_.calibration_since(), -1);  // the collector's default
  EXPECT_THAT(r.out, HasSubstr("change hosts measured since 2027-01-15 08:00:00Z: 5\n"));
  EXPECT_THAT(r.out, HasSubstr("PLATFORM"));
  EXPECT_THAT(r.out, HasSubstr("samba     signing AES_128_GMAC -> encryption AES_128_GCM  5"));
  EXPECT_THAT(r.out, HasSubstr("+2.5"));
  EXPECT_THAT(r.out, HasSubstr("+3.1"));
  EXPECT_THAT(r.out, HasSubstr("+0.6"));
  EXPECT_THAT(r.out, HasSubstr("x1.30"));
  EXPECT_THAT(r.out, HasSubstr("x1.46"));
  EXPECT_THAT(r.out, HasSubstr("x1.12 (5 changes)"));
  EXPECT_THAT(r.out, Not(HasSubstr("saved by")));

  Result week = Run({"changes", "calibration", "--since", "7d", "--format=json"});
  EXPECT_EQ(week.rc, 0) << week.err;
  EXPECT_EQ(admin_.calibration_since(), 7 * 86400);
  EXPECT_THAT(week.out, HasSubstr("\"suggestedCpuPerByteFactor\": 1.12"));

  Result saved = Run({"changes", "calibration", "--save", "--since", "14d"});
  EXPECT_EQ(saved.rc, 0) << saved.err;
  EXPECT_EQ(admin_.calibration_since(), 14 * 86400);
  EXPECT_THAT(saved.out, StartsWith("calibration 3 saved by carol"));

  Result history = Run({"changes", "calibration", "--history"});
  EXPECT_EQ(history.rc, 0) << history.err;
  EXPECT_THAT(history.out, HasSubstr("\n3 "));
  EXPECT_THAT(history.out, HasSubstr("\n2 "));
  EXPECT_THAT(history.out, HasSubstr("samba signing AES_128_GMAC -> encryption AES_128_GCM x1.12"));

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"changes", "calibration", "--save", "--history"},
        {"changes", "calibration", "--history", "--since", "7d"},
        {"changes", "calibration", "--since", "soon"},
        {"changes", "calibration", "--since", "0s"}}) {
    EXPECT_FALSE(ParseCommandLine(bad, absl::Now()).ok()) << absl::StrJoin(bad, " ");
  }
}

}  // namespace
}  // namespace smbfleet::cli

namespace smbfleet::cli {
namespace {

TEST_F(CommandsTest, ApproveSignsWhatThePayloadSaysWithTheLocalKey) {
  Ed25519Key key = UseNewApproverKey();
  Result r = Run({"changes", "approve", "c-42", "--comment", "ok"});
  ASSERT_EQ(r.rc, 0) << r.err;
  // What the signature covers is shown from the payload.
  EXPECT_THAT(r.out, HasSubstr("signing change c-42 version 1"));
  EXPECT_THAT(r.out, HasSubstr("fs01"));
  EXPECT_THAT(r.out, HasSubstr("server.requireSigning: false -> true"));
  ASSERT_EQ(admin_.approved().size(), 1u);
  const v1::ApproveChangeRequest sent = admin_.approved()[0];
  EXPECT_EQ(sent.comment(), "ok");
  EXPECT_EQ(sent.signature().key_id(), KeyId(key.public_raw));
  EXPECT_TRUE(VerifyEd25519(key.public_raw, PayloadOf("c-42"), sent.signature().signature()).ok());
  // The private key is never sent nor printed.
  EXPECT_THAT(sent.DebugString(), Not(HasSubstr("PRIVATE KEY")));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("PRIVATE KEY")));

  // Another key file named with --key signs instead.
  auto other = GenerateEd25519Key();
  const std::string other_path = ::testing::TempDir() + "/other-approver.key";
  std::ofstream(other_path) << other->private_pem;
  ASSERT_EQ(Run({"changes", "approve", "c-42", "--key", other_path}).rc, 0);
  EXPECT_EQ(admin_.approved().back().signature().key_id(), KeyId(other->public_raw));

  // No key: nothing is sent.
  Result missing = Run({"changes", "approve", "c-42", "--key", "/nonexistent/approver.key"});
  EXPECT_EQ(missing.rc, 2);
  EXPECT_THAT(missing.err, HasSubstr("keys init"));
  EXPECT_EQ(admin_.approved().size(), 2u);
}

TEST_F(CommandsTest, RollbackSignsTheRollbackChangeAtOnce) {
  Ed25519Key key = UseNewApproverKey();
  admin_.Payload("rb-7", PayloadOf("rb-7", "c-42"));
  Result r = Run({"changes", "rollback", "c-42", "--reason", "undo"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(rollback of c-42)"));
  ASSERT_EQ(admin_.approved().size(), 1u);
  EXPECT_EQ(admin_.approved()[0].id(), "rb-7");
  EXPECT_TRUE(VerifyEd25519(key.public_raw, PayloadOf("rb-7", "c-42"),
                            admin_.approved()[0].signature().signature())
                  .ok());
}

// `smbfleetctl keys ARGS...`: local, never the collector.
int RunKeys(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> argv = {"keys"};
  argv.insert(argv.end(), args.begin(), args.end());
  StubFactory no_collector = [](const GlobalFlags&) {
    ADD_FAILURE() << "keys commands never call the collector";
    return absl::StatusOr<std::unique_ptr<v1::AdminService::StubInterface>>(
        absl::UnavailableError("no collector in this test"));
  };
  return RunCommandLine(argv, no_collector, out, err);
}

TEST_F(CommandsTest, KeysInitWritesAPrivateFileOnceAndShowPrintsItsPublicHalf) {
  const std::string path = ::testing::TempDir() + "/keys-init/approver.key";
  std::remove(path.c_str());
  std::ostringstream out, err;
  ASSERT_EQ(RunKeys({"init", "--key", path}, out, err), 0) << err.str();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_THAT(out.str(), HasSubstr("public key: ed25519:"));
  EXPECT_THAT(out.str(), Not(HasSubstr("PRIVATE")));
  std::ifstream in(path);
  std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto key = Ed25519KeyFromPem(pem);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_THAT(out.str(), HasSubstr(KeyId(key->public_raw)));

  std::ostringstream again_out, again_err;
  EXPECT_EQ(RunKeys({"init", "--key", path}, again_out, again_err), 5);
  EXPECT_THAT(again_err.str(), HasSubstr("not replaced"));
  std::ifstream still(path);
  std::string unchanged((std::istreambuf_iterator<char>(still)), std::istreambuf_iterator<char>());
  EXPECT_EQ(unchanged, pem);

  std::ostringstream show_out, show_err;
  ASSERT_EQ(RunKeys({"show", "--key", path}, show_out, show_err), 0);
  EXPECT_THAT(show_out.str(), HasSubstr(PublicKeyText(key->public_raw)));
  EXPECT_THAT(show_out.str(), Not(HasSubstr("PRIVATE")));

  std::ostringstream json_out, json_err;
  ASSERT_EQ(RunKeys({"show", "--key", path, "--format=json"}, json_out, json_err), 0);
  EXPECT_THAT(json_out.str(), HasSubstr("\"keyId\": \"" + KeyId(key->public_raw) + "\""));
  EXPECT_THAT(json_out.str(), HasSubstr("\"publicKey\":"));
}

TEST_F(CommandsTest, ApproveOfAV2PayloadShowsAndChecksTheHostsItsTreeHeadCommitsTo) {
  Ed25519Key key = UseNewApproverKey();
  const std::string payload = V2PayloadOf("c-43", V2Hosts());
  admin_.Payload("c-43", payload, V2Hosts());
  Result r = Run({"changes", "approve", "c-43"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("  fs01\n    server.requireSigning: false -> true\n  fs02\n"));
  ASSERT_EQ(admin_.approved().size(), 1u);
  EXPECT_TRUE(
      VerifyEd25519(key.public_raw, payload, admin_.approved()[0].signature().signature()).ok());

  // The collector shows other values than the approvers would sign, or leaves a host out:
  // nothing is signed.
  std::vector<v1::HostOrder> shown = V2Hosts();
  shown[1].mutable_settings(0)->set_value("false");
  admin_.Payload("c-43", payload, shown);
  Result lied = Run({"changes", "approve", "c-43"});
  EXPECT_NE(lied.rc, 0);
  EXPECT_THAT(lied.err, HasSubstr("do not hash to the tree head"));
  admin_.Payload("c-43", payload, {V2Hosts()[0]});
  EXPECT_NE(Run({"changes", "approve", "c-43"}).rc, 0);
  EXPECT_EQ(admin_.approved().size(), 1u);
}

TEST_F(CommandsTest, ApproversAddTakesThePublicKeyTextOrAFile) {
  auto key = GenerateEd25519Key();
  Result r = Run({"approvers", "add", "ann", "--public-key", PublicKeyText(key->public_raw)});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("registered approver key " + KeyId(key->public_raw) + " of ann"));
  const std::string file = ::testing::TempDir() + "/ann.pub";
  std::ofstream(file) << "public key: " << PublicKeyText(key->public_raw) << "\nkey id: x\n";
  EXPECT_EQ(Run({"approvers", "add", "ann", "--public-key", "@" + file}).rc, 0);
  auto bad =
      ParseCommandLine({"approvers", "add", "ann", "--public-key", "ed25519:AAAA"}, absl::Now());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--public-key"));
}

// A port on 127.0.0.1 that is bound but not listening: a connection to it is refused until the
// socket is closed and a server listens there. -1 when no socket could be bound.
int BoundButNotListening(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// A channel to 127.0.0.1:port that reconnects as smbfleetctl's does.
std::shared_ptr<grpc::Channel> ReconnectingChannel(int port) {
  grpc::ChannelArguments args;
  SetReconnectBackoff(args);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), args);
}

grpc::Status GetChange(v1::AdminService::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetChangeRequest request;
  request.set_id("c-1");
  v1::GetChangeResponse response;
  return stub.GetChange(&context, request, &response);
}

// A collector that takes the first connection only after a moment (restarting, or a connection
// attempt that gRPC misread as failed): a call fails at once, the wait lets the channel try again.
TEST(AwaitConnectionTest, ACollectorThatListensWithinTheWaitIsConnectedTo) {
  int port = 0;
  const int fd = BoundButNotListening(&port);
  ASSERT_GE(fd, 0);
  auto channel = ReconnectingChannel(port);
  auto stub = v1::AdminService::NewStub(channel);
  // What a command met without the wait: its first attempt refused, the call failed at once.
  EXPECT_EQ(GetChange(*stub).error_code(), grpc::StatusCode::UNAVAILABLE);

  FakeAdmin admin;
  std::unique_ptr<grpc::Server> server;
  std::thread starts_late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    close(fd);
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials());
    builder.RegisterService(&admin);
    server = builder.BuildAndStart();
  });
  const bool connected = AwaitConnection(*channel, std::chrono::seconds(20));
  starts_late.join();
  ASSERT_NE(server, nullptr) << "port " << port << " was taken meanwhile";
  EXPECT_TRUE(connected);
  const grpc::Status answered = GetChange(*stub);  // the fake's answer: it got there
  EXPECT_EQ(answered.error_code(), grpc::StatusCode::NOT_FOUND) << answered.error_message();
  server->Shutdown();
}

TEST(AwaitConnectionTest, NothingListeningIsNotConnectedAfterTheWaitAndTheCallSaysWhy) {
  int port = 0;
  const int fd = BoundButNotListening(&port);
  ASSERT_GE(fd, 0);
  auto channel = ReconnectingChannel(port);
  EXPECT_FALSE(AwaitConnection(*channel, std::chrono::milliseconds(500)));
  auto stub = v1::AdminService::NewStub(channel);
  const grpc::Status refused = GetChange(*stub);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("Connection refused"));
  close(fd);
}

}  // namespace
}  // namespace smbfleet::cli
