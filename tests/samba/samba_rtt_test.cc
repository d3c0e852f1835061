// Round-trip times of a real smbclient session on loopback, read by the agent through sock_diag.

#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "agent/platform/samba/samba_source.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

// The client ports of established connections to local port `port`, from /proc/net/tcp and
// tcp6: a second, independent view of the same sockets.
std::set<uint32_t> ClientPortsFromProc(int port) {
  std::set<uint32_t> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 4 || f[3] != "01") continue;  // 01: ESTABLISHED
      std::vector<std::string> local = absl::StrSplit(f[1], ':');
      std::vector<std::string> remote = absl::StrSplit(f[2], ':');
      uint32_t local_port = 0, remote_port = 0;
      if (local.size() != 2 || remote.size() != 2 || !absl::SimpleHexAtoi(local[1], &local_port) ||
          !absl::SimpleHexAtoi(remote[1], &remote_port)) {
        continue;
      }
      if (local_port == static_cast<uint32_t>(port)) out.insert(remote_port);
    }
  }
  return out;
}

TEST(SambaRttTest, HeldSessionHasItsConnectionsRoundTripTimes) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  ASSERT_TRUE((*lab)->Hold("c1", "demo").ok());
  ASSERT_TRUE((*lab)->Send("c1", "ls").ok());

  auto posture = agent::NewSambaSource((*lab)->Options(), (*lab)->runner())->Collect();
  ASSERT_TRUE(posture.ok()) << posture.status();
  EXPECT_EQ(posture->probe_errors_size(), 0) << posture->DebugString();
  ASSERT_EQ(posture->sessions_size(), 1) << posture->DebugString();
  const v1::Session& s = posture->sessions(0);

  EXPECT_THAT(ClientPortsFromProc((*lab)->port()), ::testing::Contains(s.client_port()))
      << "smbd port " << (*lab)->port() << ", session " << s.DebugString();
  ASSERT_TRUE(s.has_rtt_us()) << s.DebugString();
  ASSERT_TRUE(s.has_min_rtt_us()) << s.DebugString();
  EXPECT_GT(s.rtt_us(), 0u);
  EXPECT_LT(s.rtt_us(), 1000000u);
  EXPECT_GT(s.min_rtt_us(), 0u);
  EXPECT_LT(s.min_rtt_us(), 1000000u);
  EXPECT_TRUE(s.has_retransmits());
  std::cout << "{\"rtt_us\": " << s.rtt_us() << ", \"rttvar_us\": " << s.rttvar_us()
            << ", \"min_rtt_us\": " << s.min_rtt_us() << ", \"retransmits\": " << s.retransmits()
            << "}\n";
}

}  // namespace
}  // namespace smbfleet::testing
