#include "common/change_calibration.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet {
namespace {

namespace v1 = smbfleet::v1;
using ::testing::DoubleNear;
using ::testing::Optional;

// One change host as the collector stores it after the after-window arrived.
struct H {
  std::string platform = "samba";
  std::string before = "signing AES_128_GMAC";
  std::string after = "encryption AES_128_GCM";
  bool measured = true;
  bool known = true;
  double predicted_points = 0;
  double predicted_ratio = 0;
  std::optional<double> points = std::nullopt;
  std::optional<double> ratio = std::nullopt;
};

CalibrationInput Input(const H& h) {
  CalibrationInput in;
  in.platform = h.platform;
  in.host.set_host("fs01");
  auto* cost = in.host.mutable_impact()->mutable_cost();
  cost->set_before(h.before);
  cost->set_after(h.after);
  cost->set_known(h.known);
  cost->set_cpu_change_points(h.predicted_points);
  cost->set_cpu_ratio(h.predicted_ratio);
  if (!h.measured) return in;
  v1::MeasuredImpact* m = in.host.mutable_measured();
  m->set_prediction_known(h.known);
  m->set_predicted_cpu_change_points(h.predicted_points);
  m->set_predicted_cpu_ratio(h.predicted_ratio);
  if (h.points) m->set_cpu_change_points(*h.points);
  if (h.ratio) m->set_cpu_per_byte_ratio(*h.ratio);
  return in;
}

std::vector<CalibrationGroup> CalibrateHosts(const std::vector<H>& hosts) {
  std::vector<CalibrationInput> inputs;
  inputs.reserve(hosts.size());
  for (const H& h : hosts) inputs.push_back(Input(h));
  return Calibrate(inputs);
}

// A measured host with a known prediction; absent figures as std::nullopt.
H Measured(double predicted_points, double predicted_ratio, std::optional<double> points,
           std::optional<double> ratio) {
  H h;
  h.predicted_points = predicted_points;
  h.predicted_ratio = predicted_ratio;
  h.points = points;
  h.ratio = ratio;
  return h;
}

H NotMeasured() {
  H h;
  h.measured = false;
  h.predicted_points = 9.0;
  h.predicted_ratio = 9.0;
  return h;
}

H OnPlatform(std::string platform, std::string after = "encryption AES_128_GCM") {
  H h = Measured(1.0, 1.0, 1.0, 1.0);
  h.platform = std::move(platform);
  h.after = std::move(after);
  return h;
}

TEST(CalibrateTest, NoMeasuredHostsNoGroups) {
  EXPECT_TRUE(Calibrate({}).empty());
  EXPECT_TRUE(CalibrateHosts({NotMeasured(), NotMeasured()}).empty());
}

TEST(CalibrateTest, MediansErrorAndFactorForOneClass) {
  const auto groups = CalibrateHosts({
      Measured(2.0, 1.25, 3.0, 1.5),
      Measured(2.0, 1.25, 2.5, 1.25),
      Measured(4.0, 1.25, 6.0, 1.75),
      NotMeasured(),
  });
  ASSERT_EQ(groups.size(), 1u);
  const CalibrationGroup& g = groups[0];
  EXPECT_EQ(g.platform, "samba");
  EXPECT_EQ(g.protection_before, "signing AES_128_GMAC");
  EXPECT_EQ(g.protection_after, "encryption AES_128_GCM");
  EXPECT_EQ(g.changes, 3u);
  EXPECT_THAT(g.predicted_cpu_change_points, Optional(DoubleNear(2.0, 1e-9)));
  EXPECT_THAT(g.measured_cpu_change_points, Optional(DoubleNear(3.0, 1e-9)));
  // Errors 1.0, 0.5, 2.0.
  EXPECT_THAT(g.cpu_change_points_error, Optional(DoubleNear(1.0, 1e-9)));
  EXPECT_EQ(g.cpu_change_points_pairs, 3u);
  EXPECT_THAT(g.predicted_cpu_ratio, Optional(DoubleNear(1.25, 1e-9)));
  EXPECT_THAT(g.measured_cpu_per_byte_ratio, Optional(DoubleNear(1.5, 1e-9)));
  // Quotients 1.2, 1.0, 1.4.
  EXPECT_THAT(g.cpu_per_byte_measured_over_predicted, Optional(DoubleNear(1.2, 1e-9)));
  EXPECT_EQ(g.cpu_per_byte_pairs, 3u);
  EXPECT_THAT(g.suggested_cpu_per_byte_factor, Optional(DoubleNear(1.2, 1e-9)));
  EXPECT_EQ(g.suggestion, "x1.20 (3 changes)");
}

TEST(CalibrateTest, GroupsByPlatformAndTransitionInOrder) {
  const auto groups = CalibrateHosts({
      OnPlatform("windows"),
      OnPlatform("samba", "signing AES_128_CMAC"),
      OnPlatform("samba"),
      OnPlatform(""),
  });
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].platform, "samba");
  EXPECT_EQ(groups[0].protection_after, "encryption AES_128_GCM");
  EXPECT_EQ(groups[1].platform, "samba");
  EXPECT_EQ(groups[1].protection_after, "signing AES_128_CMAC");
  EXPECT_EQ(groups[2].platform, "unknown");
  EXPECT_EQ(groups[3].platform, "windows");
  for (const CalibrationGroup& g : groups) EXPECT_EQ(g.changes, 1u);
}

TEST(CalibrateTest, AbsentAndUnknownFiguresAreSkipped) {
  // The model had no benchmark: its zeros are not predictions.
  H unknown = Measured(0, 0, 4.0, 2.0);
  unknown.known = false;
  const auto groups = CalibrateHosts({
      unknown,
      // Known prediction, nothing measured (no traffic in a window).
      Measured(1.0, 1.5, std::nullopt, std::nullopt),
      // Known points, unknown ratio (0); both measured.
      Measured(3.0, 0, 5.0, 1.1),
  });
  ASSERT_EQ(groups.size(), 1u);
  const CalibrationGroup& g = groups[0];
  EXPECT_EQ(g.changes, 3u);
  EXPECT_THAT(g.predicted_cpu_change_points, Optional(DoubleNear(2.0, 1e-9)));
  EXPECT_THAT(g.measured_cpu_change_points, Optional(DoubleNear(4.5, 1e-9)));
  EXPECT_EQ(g.cpu_change_points_pairs, 1u);
  EXPECT_THAT(g.cpu_change_points_error, Optional(DoubleNear(2.0, 1e-9)));
  EXPECT_THAT(g.predicted_cpu_ratio, Optional(DoubleNear(1.5, 1e-9)));
  EXPECT_THAT(g.measured_cpu_per_byte_ratio, Optional(DoubleNear(1.55, 1e-9)));
  EXPECT_EQ(g.cpu_per_byte_pairs, 0u);
  EXPECT_EQ(g.cpu_per_byte_measured_over_predicted, std::nullopt);
  EXPECT_EQ(g.suggested_cpu_per_byte_factor, std::nullopt);
  EXPECT_EQ(g.suggestion, "not enough changes (0 of 3)");
}

TEST(CalibrateTest, TwoPairsAreNotEnoughForAFactor) {
  const auto groups = CalibrateHosts({
      Measured(0, 1.25, std::nullopt, 1.5),
      Measured(0, 1.25, std::nullopt, 2.0),
      Measured(0, 1.25, std::nullopt, std::nullopt),
  });
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].cpu_per_byte_pairs, 2u);
  EXPECT_THAT(groups[0].cpu_per_byte_measured_over_predicted, Optional(DoubleNear(1.4, 1e-9)));
  EXPECT_EQ(groups[0].suggested_cpu_per_byte_factor, std::nullopt);
  EXPECT_EQ(groups[0].suggestion, "not enough changes (2 of 3)");
}

TEST(CalibrateTest, PlatformNamesAndTheGroupAsProto) {
  EXPECT_EQ(CalibrationPlatform(smbfleet::v1::PLATFORM_SAMBA), "samba");
  EXPECT_EQ(CalibrationPlatform(smbfleet::v1::PLATFORM_WINDOWS), "windows");
  EXPECT_EQ(CalibrationPlatform(smbfleet::v1::PLATFORM_UNSPECIFIED), "");

  const auto groups = CalibrateHosts({
      Measured(0, 1.25, std::nullopt, 1.5),
      Measured(0, 1.25, std::nullopt, 2.0),
  });
  ASSERT_EQ(groups.size(), 1u);
  const smbfleet::v1::CostModelCalibrationGroup g = ToProto(groups[0]);
  EXPECT_EQ(g.platform(), groups[0].platform);
  EXPECT_EQ(g.changes(), 2u);
  EXPECT_EQ(g.cpu_per_byte_pairs(), 2u);
  EXPECT_NEAR(g.cpu_per_byte_measured_over_predicted(), 1.4, 1e-9);
  EXPECT_FALSE(g.has_suggested_cpu_per_byte_factor());  // unset stays unset
  EXPECT_FALSE(g.has_cpu_change_points_error());
  EXPECT_EQ(g.suggestion(), "not enough changes (2 of 3)");
}

TEST(CalibrateTest, TheFactorOfTheHostsClassMultipliesTheCpuPerByte) {
  smbfleet::v1::CostModelCalibration calibration;
  calibration.set_id(3);
  auto add = [&](const std::string& platform, const std::string& after,
                 std::optional<double> factor) {
    auto* g = calibration.add_groups();
    g->set_platform(platform);
    g->set_protection_before("signing AES_128_GMAC");
    g->set_protection_after(after);
    if (factor) g->set_suggested_cpu_per_byte_factor(*factor);
  };
  add("samba", "encryption AES_128_GCM", 1.12);
  add("windows", "encryption AES_128_GCM", 0.8);
  add("unknown", "encryption AES_128_GCM", 1.5);
  add("samba", "encryption AES_256_GCM", std::nullopt);  // not enough changes

  auto cost = [](const std::string& after, bool known = true, double ratio = 1.25) {
    smbfleet::v1::PredictedCost c;
    c.set_before("signing AES_128_GMAC");
    c.set_after(after);
    c.set_known(known);
    c.set_cpu_ratio(ratio);
    c.set_cpu_change_points(2.5);
    return c;
  };
  smbfleet::v1::PredictedCost samba = cost("encryption AES_128_GCM");
  ASSERT_TRUE(ApplyCalibration(calibration, "samba", &samba));
  EXPECT_NEAR(samba.cpu_ratio(), 1.25 * 1.12, 1e-12);
  EXPECT_DOUBLE_EQ(samba.cpu_change_points(), 2.5);  // the model's
  EXPECT_EQ(samba.calibration_id(), 3);
  EXPECT_DOUBLE_EQ(samba.calibration_factor(), 1.12);

  smbfleet::v1::PredictedCost windows = cost("encryption AES_128_GCM");
  ASSERT_TRUE(ApplyCalibration(calibration, "windows", &windows));
  EXPECT_NEAR(windows.cpu_ratio(), 1.25 * 0.8, 1e-12);
  smbfleet::v1::PredictedCost unknown = cost("encryption AES_128_GCM");
  ASSERT_TRUE(ApplyCalibration(calibration, "", &unknown));
  EXPECT_NEAR(unknown.cpu_ratio(), 1.25 * 1.5, 1e-12);

  // Left as the model made it: no factor for the class, another class, an unknown prediction.
  for (auto [platform, c] : std::vector<std::pair<std::string, smbfleet::v1::PredictedCost>>{
           {"samba", cost("encryption AES_256_GCM")},
           {"samba", cost("encryption AES_128_CCM")},
           {"samba", cost("encryption AES_128_GCM", /*known=*/false)},
           {"samba", cost("encryption AES_128_GCM", true, /*ratio=*/0)}}) {
    const smbfleet::v1::PredictedCost before = c;
    EXPECT_FALSE(ApplyCalibration(calibration, platform, &c)) << c.after();
    EXPECT_EQ(c.SerializeAsString(), before.SerializeAsString()) << c.after();
  }
}

}  // namespace
}  // namespace smbfleet
