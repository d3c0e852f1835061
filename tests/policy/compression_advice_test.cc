// `smbfleetctl policy eval` on a WAN-labelled Windows host with compressible data: the posture
// is the real-shaped Windows Server 2025 capture read through the agent's capture source (its
// VMS1 share has CompressData off), with the trusted labels an admin gives a branch-office
// server (link=wan, link_speed=100Mbit, data=vm-disk) and the compression benchmark the agent
// runs on this host. The baseline advises compression for VMS1, and the plan says the predicted
// gain and CPU from the cost model.

#include <fstream>
#include <sstream>

#include "agent/bench/compression_bench.h"
#include "agent/platform/windows/windows_source.h"
#include "cli/run.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "smbfleet/v1/policy.pb.h"

namespace smbfleet {
namespace {

const std::string kBaseline = std::string(SMBFLEET_SOURCE_DIR) + "/policy/policies/baseline.yaml";

v1::Posture WanCapture(const std::string& data_label) {
  auto source = agent::windows::NewWindowsCaptureSource(std::string(SMBFLEET_SOURCE_DIR) +
                                                        "/tests/fixtures/windows/ws2025");
  auto posture = source->Collect();
  EXPECT_TRUE(posture.ok()) << posture.status();
  v1::Posture p = posture.ok() ? *posture : v1::Posture();
  auto& labels = *p.mutable_host()->mutable_labels();
  labels["link"] = "wan";
  labels["link_speed"] = "100Mbit";
  labels["data"] = data_label;
  agent::bench::CompressionBenchOptions options;
  // Normal priority: at the agent's idle priority a busy test machine can starve the run until
  // cells are left out (the rates are per second of CPU time either way).
  options.lowest_priority = false;
  options.corpora = {data_label};
  options.algorithms = {v1::COMPRESSION_LZ77_HUFFMAN};
  auto rows = agent::bench::RunCompressionBenchmark(options);
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (rows.ok()) {
    for (const auto& row : *rows) *p.add_compression_benchmarks() = row;
  }
  return p;
}

struct Eval {
  int rc = 0;
  std::string out;
  std::string err;
  v1::PolicyReport report;
};

Eval PolicyEval(const v1::Posture& posture, const std::string& name, const std::string& format) {
  std::string path = testing::TempDir() + "/compression_advice_test_" + name + ".json";
  auto json = ToJson(posture);
  EXPECT_TRUE(json.ok()) << json.status();
  std::ofstream(path) << *json;
  std::ostringstream out, err;
  cli::StubFactory no_collector = [](const cli::GlobalFlags&) {
    ADD_FAILURE() << "policy eval never calls the collector";
    return absl::StatusOr<std::unique_ptr<v1::AdminService::StubInterface>>(
        absl::UnavailableError("no collector in this test"));
  };
  Eval e;
  e.rc = cli::RunCommandLine({"policy", "eval", "--policy", kBaseline, "--posture", path,
                              "--format=" + format, "--now", "2026-12-05T00:00:00Z"},
                             no_collector, out, err);
  e.out = out.str();
  e.err = err.str();
  if (format == "json" && e.rc == 0) {
    EXPECT_TRUE(FromJson(e.out, "policy eval output", &e.report).ok()) << e.out;
  }
  return e;
}

TEST(CompressionAdviceTest, WanHostWithCompressibleDataGetsCompressionWithGainAndCpu) {
  v1::Posture posture = WanCapture("vm-disk");
  Eval e = PolicyEval(posture, "vm", "json");
  ASSERT_EQ(e.rc, 0) << e.err;
  bool advised = false;
  for (const auto& r : e.report.evaluation().results()) {
    if (r.rule_id() == "wan-compression" && r.share() == "VMS1") {
      advised = true;
      EXPECT_EQ(r.status(), v1::COMPLIANCE_STATUS_NON_COMPLIANT);
    }
  }
  EXPECT_TRUE(advised);
  bool step = false;
  for (const auto& s : e.report.plan().steps()) {
    if (s.setting() == "share.compressData" && s.share() == "VMS1") {
      step = true;
      EXPECT_EQ(s.value(), "true");
    }
  }
  EXPECT_TRUE(step);
  const v1::PredictedCost& cost = e.report.plan().impact().cost();
  EXPECT_GT(cost.compression_ratio(), 1.5);
  EXPECT_EQ(cost.compression_ratio_source(), "vm-disk benchmark (label data)");
  // 100 Mbit: link-bound, so the gain is about the ratio; the CPU is this host's compressor.
  EXPECT_GT(cost.throughput_ratio(), 1.4);
  EXPECT_GT(cost.cpu_change_points(), 0);
  EXPECT_NE(cost.summary().find("enabling compression XPRESS Huffman (ratio "), std::string::npos)
      << cost.summary();
  // Every share whose CompressData the capture reports off; all priced by the label's corpus.
  EXPECT_NE(cost.summary().find("(compression of traffic on VMS1"), std::string::npos)
      << cost.summary();

  Eval text = PolicyEval(posture, "vm-text", "text");
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("enabling compression XPRESS Huffman"), std::string::npos) << text.out;
}

TEST(CompressionAdviceTest, IncompressibleDataGetsNoCompressionAdvice) {
  Eval e = PolicyEval(WanCapture("compressed"), "random", "json");
  ASSERT_EQ(e.rc, 0) << e.err;
  for (const auto& r : e.report.evaluation().results()) {
    if (r.rule_id() == "wan-compression") {
      EXPECT_EQ(r.status(), v1::COMPLIANCE_STATUS_NOT_APPLICABLE) << r.share();
    }
  }
  for (const auto& s : e.report.plan().steps()) {
    EXPECT_FALSE(s.setting() == "share.compressData" && s.value() == "true") << s.share();
  }
}

}  // namespace
}  // namespace smbfleet
