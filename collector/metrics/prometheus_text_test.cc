#include "collector/metrics/prometheus_text.h"

#include <cmath>

#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

TEST(PrometheusTextTest, ReadsSamplesLabelsAndSkipsComments) {
  auto samples = ParsePrometheusText(
      "# HELP a_total Things.\n"
      "# TYPE a_total counter\n"
      "a_total{result=\"stored\",x=\"q\\\"uote\"} 3\n"
      "\n"
      "b 1.5 1700000000000\n"
      "c_bucket{le=\"+Inf\"} +Inf\n");
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ(FindSample(*samples, "a_total", {{"result", "stored"}, {"x", "q\"uote"}}), 3);
  EXPECT_EQ(FindSample(*samples, "b"), 1.5);
  EXPECT_TRUE(std::isinf(*FindSample(*samples, "c_bucket", {{"le", "+Inf"}})));
  EXPECT_EQ(FindSample(*samples, "a_total", {{"result", "other"}}), std::nullopt);
  EXPECT_EQ(FindSample(*samples, "a_total"), std::nullopt);
}

TEST(PrometheusTextTest, ErrorsNameTheLine) {
  for (const char* bad : {"a{x=1} 2\n", "a{x=\"1} 2\n", "a\n", "a one\n", "{x=\"1\"} 2\n"}) {
    auto samples = ParsePrometheusText(std::string("ok 1\n") + bad);
    ASSERT_FALSE(samples.ok()) << bad;
    EXPECT_NE(samples.status().message().find("metrics line 2"), std::string::npos)
        << samples.status();
  }
}

}  // namespace
}  // namespace smbfleet::collector
