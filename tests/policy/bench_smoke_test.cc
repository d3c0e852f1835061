// Runs the evaluation benchmark on a small fleet and checks its JSON: the figures exist and
// are positive. The speed goal itself is read from the full run, never asserted here.

#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

std::string RunBench(const std::string& args) {
  std::string cmd = std::string(POLICY_EVAL_BENCH) + " " + args;
  FILE* f = popen(cmd.c_str(), "r");
  EXPECT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while (f != nullptr && (n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  if (f != nullptr) {
    EXPECT_EQ(pclose(f), 0) << out;
  }
  return out;
}

TEST(PolicyEvalBenchSmokeTest, PrintsWellFormedPositiveFigures) {
  std::string out = RunBench("--hosts=300 --distinct=30 --plans");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["benchmark"], "policy_eval");
  EXPECT_EQ(j["hosts"], 300);
  EXPECT_EQ(j["shares_per_host"], 20);
  EXPECT_EQ(j["sessions_per_host"], 50);
  EXPECT_GT(j["rules"].get<int>(), 10);
  // At least one result per rule and host.
  EXPECT_GE(j["results"].get<long>(), 300L * j["rules"].get<long>());
  EXPECT_GT(j["non_compliant_results"].get<long>(), 0);
  EXPECT_GT(j["plan_steps"].get<long>(), 0);
  EXPECT_GT(j["affected_clients"].get<long>(), 0);
  EXPECT_GT(j["cpu_seconds"].get<double>(), 0.0);
  EXPECT_GT(j["hosts_per_second"].get<double>(), 0.0);
}

TEST(PolicyEvalBenchSmokeTest, RejectsBadArguments) {
  std::string cmd = std::string(POLICY_EVAL_BENCH) + " --hosts=zero 2>/dev/null";
  int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, 0);
}

}  // namespace
