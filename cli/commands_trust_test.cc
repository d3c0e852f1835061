// `smbfleetctl trust`: the root key file, the approvers file, and a signed set that an agent's
// check (the root's signature over the set's bytes) accepts; none of it needs a collector.

#include "cli/commands_trust.h"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "cli/run.h"
#include "common/approval_signing.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::cli {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::HasSubstr;

class TrustCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/trust_command_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  int Run(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    StubFactory no_collector = [](const GlobalFlags&) {
      ADD_FAILURE() << "this command should not call the collector";
      return absl::StatusOr<std::unique_ptr<v1::AdminService::StubInterface>>(
          absl::UnavailableError("no collector in this test"));
    };
    std::vector<std::string> argv = {"trust"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommandLine(argv, no_collector, out_, err_);
  }

  std::string dir_;
  std::ostringstream out_, err_;
};

TEST_F(TrustCommandTest, InitRootWritesAPrivateKeyOnceAndPrintsThePin) {
  const std::string key = dir_ + "/root.key";
  ASSERT_EQ(Run({"init-root", "--key", key}), 0) << err_.str();
  struct stat st;
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  absl::StatusOr<Ed25519Key> parsed = Ed25519KeyFromPem(*ReadFile(key));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(out_.str(), HasSubstr("root: \"" + PublicKeyText(parsed->public_raw) + "\""));

  EXPECT_NE(Run({"init-root", "--key", key}), 0);
  EXPECT_THAT(err_.str(), HasSubstr("exists"));
  EXPECT_EQ(Ed25519KeyFromPem(*ReadFile(key))->public_raw, parsed->public_raw);
}

TEST_F(TrustCommandTest, SignedSetFromAnApproversFileVerifiesWithTheRoot) {
  const std::string key = dir_ + "/root.key";
  ASSERT_TRUE(InitRoot(key).ok());
  Ed25519Key root = *Ed25519KeyFromPem(*ReadFile(key));
  Ed25519Key ann = *GenerateEd25519Key();
  Ed25519Key bob = *GenerateEd25519Key();
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/approvers.yaml", "ann: \"" + PublicKeyText(ann.public_raw) +
                                                            "\"\nbob: \"" +
                                                            PublicKeyText(bob.public_raw) + "\"\n")
                  .ok());
  ASSERT_EQ(Run({"sign-approvers", "--root-key", key, "--serial", "7", "--approvers",
                 dir_ + "/approvers.yaml", "--out", dir_ + "/set.bin"}),
            0)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("approver set serial 7"));
  EXPECT_THAT(out_.str(), HasSubstr("ann  " + KeyId(ann.public_raw)));

  v1::SignedApproverSet set;
  ASSERT_TRUE(set.ParseFromString(*ReadFile(dir_ + "/set.bin")));
  EXPECT_TRUE(VerifyEd25519(root.public_raw, set.approver_set(), set.signature()).ok());
  EXPECT_EQ(set.root_key_id(), KeyId(root.public_raw));
  v1::ApproverSet inner;
  ASSERT_TRUE(inner.ParseFromString(set.approver_set()));
  EXPECT_EQ(inner.serial(), 7u);
  ASSERT_EQ(inner.approvers_size(), 2);
  EXPECT_EQ(inner.approvers(1).name(), "bob");
  EXPECT_EQ(inner.approvers(1).public_key(), bob.public_raw);

  ASSERT_EQ(Run({"show", "--file", dir_ + "/set.bin"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("bob  " + KeyId(bob.public_raw)));
}

TEST_F(TrustCommandTest, RevokedKeysAreLeftOut) {
  Ed25519Key root = *GenerateEd25519Key();
  v1::ApproverKey kept, revoked;
  kept.set_name("ann");
  kept.set_public_key(GenerateEd25519Key()->public_raw);
  revoked.set_name("bob");
  revoked.set_public_key(GenerateEd25519Key()->public_raw);
  revoked.mutable_revoked_at()->set_seconds(1);
  absl::StatusOr<v1::SignedApproverSet> set =
      SignApproverSet(root.private_pem, 2, {kept, revoked}, absl::FromUnixSeconds(100));
  ASSERT_TRUE(set.ok()) << set.status();
  v1::ApproverSet inner;
  ASSERT_TRUE(inner.ParseFromString(set->approver_set()));
  ASSERT_EQ(inner.approvers_size(), 1);
  EXPECT_EQ(inner.approvers(0).name(), "ann");
  EXPECT_EQ(inner.approvers(0).key_id(), KeyId(kept.public_key()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(SignApproverSet(root.private_pem, 0, {kept}, absl::Now()).status()));
}

TEST_F(TrustCommandTest, ApproversFileProblemsNameTheFileAndTheApprover) {
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/approvers.yaml", "ann: \"ed25519:AAAA\"\nbob: [x]\n").ok());
  absl::Status s = ReadApproversFile(dir_ + "/approvers.yaml").status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("approvers.yaml"));
  EXPECT_THAT(s.message(), HasSubstr("ann"));
  EXPECT_THAT(s.message(), HasSubstr("bob"));
}

TEST_F(TrustCommandTest, SignApproversNeedsASource) {
  EXPECT_EQ(Run({"sign-approvers", "--root-key", "k", "--serial", "1", "--out", "o"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--from-collector or --approvers"));
}

}  // namespace
}  // namespace smbfleet::cli
