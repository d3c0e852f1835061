// Share sampling on a real smbd: files written through a real smbclient session land in the
// share's path as smb.conf gives it, and the agent's report carries only their compressibility.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/bench/compression_bench.h"
#include "agent/bench/share_sampler.h"
#include "agent/core/agent.h"
#include "agent/core/testing/fake_clock.h"
#include "agent/core/testing/fake_collector_client.h"
#include "agent/platform/samba/samba_source.h"
#include "gtest/gtest.h"
#include "tests/samba/samba_lab.h"

namespace smbfleet::testing {
namespace {

TEST(SambaCompressionSamplingTest, NamedShareIsSampledFromItsSmbConfPath) {
  auto lab = SambaLab::Start();
  ASSERT_TRUE(lab.ok()) << lab.status();
  // Log-like files put through SMB into [demo]; [finance] is not named and keeps its readme.
  const std::string local = (*lab)->dir() + "/upload.log";
  {
    auto corpus = agent::bench::MakeCorpus("text", 256 << 10, 3);
    ASSERT_TRUE(corpus.ok()) << corpus.status();
    std::ofstream(local, std::ios::binary) << *corpus;
  }
  for (const char* name : {"server-a.log", "server-b.log"}) {
    auto put = (*lab)->Connect("demo", {}, "put " + local + " " + name);
    ASSERT_TRUE(put.ok()) << put.status();
    ASSERT_EQ(put->exit_code, 0) << put->stdout_data << put->stderr_data;
  }

  auto source = agent::NewSambaSource((*lab)->Options(), (*lab)->runner());
  agent::AgentConfig config;
  config.spool_dir = (*lab)->dir() + "/spool";
  config.benchmark_interval = std::chrono::milliseconds(0);
  config.compression_sampling.enabled = true;
  config.compression_sampling.shares = {"demo"};
  agent::Spool spool(config.spool_dir, 10);
  ASSERT_TRUE(spool.Open().ok());
  agent::testing::FakeClock clock;
  agent::testing::FakeCollectorClient client(&clock);
  agent::Agent agent(config, source.get(), &client, &spool, nullptr, nullptr, &clock, 1);
  agent.set_share_sampler([](const std::string& path) {
    return agent::bench::SampleCompressibility(path, agent::bench::SamplingLimits{});
  });
  ASSERT_TRUE(agent.RunOnce("startup").ok());

  const std::vector<v1::ReportRequest> reports = client.reports();
  ASSERT_EQ(reports.size(), 1u);
  bool saw_demo = false;
  for (const auto& share : reports[0].posture().shares()) {
    if (share.name() == "demo") {
      saw_demo = true;
      EXPECT_EQ(share.compressibility().not_sampled_reason(), "");
      EXPECT_EQ(share.compressibility().files_sampled(), 3u);  // two logs and the readme
      EXPECT_GT(share.compressibility().ratio(), 2.0);
      EXPECT_EQ(share.compressibility().algorithm(), v1::COMPRESSION_LZ77_HUFFMAN);
    } else {
      EXPECT_FALSE(share.has_compressibility()) << share.name();
    }
  }
  EXPECT_TRUE(saw_demo);
  const std::string wire = reports[0].SerializeAsString();
  EXPECT_EQ(wire.find("server-a.log"), std::string::npos);
}

}  // namespace
}  // namespace smbfleet::testing
