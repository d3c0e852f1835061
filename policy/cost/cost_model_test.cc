#include "policy/cost/cost_model.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/cost/compression_row_testing.h"

namespace smbfleet::policy::cost {
namespace {

namespace v1 = ::smbfleet::v1;
using ::testing::HasSubstr;

// Benchmark rows that follow seconds = per_call + per_byte x size exactly.
void AddRows(v1::Posture& posture, CryptoAlgorithm alg, double per_call, double per_byte,
             uint32_t threads = 1, double speedup = 1) {
  for (uint64_t size : {4096u, 65536u, 1u << 20}) {
    v1::Benchmark* b = posture.add_benchmarks();
    b->set_algorithm(alg);
    b->set_buffer_bytes(size);
    b->set_threads(threads);
    b->set_bytes_per_second(speedup * size / (per_call + per_byte * size));
  }
}

// A host whose benchmark says: GMAC cheapest, then GCM, HMAC, CMAC, CCM dearest.
v1::Posture BenchedPosture() {
  v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  p.mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
  p.mutable_host()->set_logical_cores(8);
  AddRows(p, v1::AES_128_GMAC, 0.3e-6, 1 / 7e9);
  AddRows(p, v1::AES_128_GCM, 0.3e-6, 1 / 4.4e9);
  AddRows(p, v1::AES_256_GCM, 0.3e-6, 1 / 4.1e9);
  AddRows(p, v1::HMAC_SHA256, 0.5e-6, 1 / 1.5e9);
  AddRows(p, v1::AES_128_CMAC, 0.5e-6, 1 / 1.0e9);
  AddRows(p, v1::AES_128_CCM, 0.4e-6, 1 / 1.2e9);
  AddRows(p, v1::AES_256_CCM, 0.4e-6, 1 / 0.84e9);
  return p;
}

HostProfile FastLinkHost() {
  v1::Posture p = BenchedPosture();
  (*p.mutable_host()->mutable_labels())["link_speed"] = "400Gbit";
  (*p.mutable_host()->mutable_labels())["rtt_ms"] = "0.05";
  return ProfileFromPosture(p);
}

TEST(ParseLinkSpeedTest, Table) {
  struct Case {
    const char* text;
    double bps;
  } cases[] = {{"1Gbit", 1e9},      {"2.5Gbps", 2.5e9},    {"100Mbit", 1e8},   {"10G", 1e10},
               {"1000000000", 1e9}, {" 40 gbit/s ", 4e10}, {"25GBit", 2.5e10}, {"100 Mb/s", 1e8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto bps = ParseLinkSpeed(c.text);
    ASSERT_TRUE(bps.ok()) << bps.status();
    EXPECT_DOUBLE_EQ(*bps, c.bps);
  }
  for (const char* bad : {"", "fast", "-1G", "0", "1Xbit", "1e20", "Gbit", "nan"}) {
    SCOPED_TRACE(bad);
    auto bps = ParseLinkSpeed(bad);
    ASSERT_FALSE(bps.ok());
    EXPECT_THAT(std::string(bps.status().message()), HasSubstr("link_speed"));
  }
}

TEST(LimitNameTest, EachLimitHasItsName) {
  EXPECT_STREQ(LimitName(Prediction::Limit::kLink), "link");
  EXPECT_STREQ(LimitName(Prediction::Limit::kLatency), "latency");
  EXPECT_STREQ(LimitName(Prediction::Limit::kCpu), "cpu");
}

TEST(ProtectionLevelTest, NamesAndEffectiveAlgorithm) {
  EXPECT_EQ(ProtectionLevel::None().ToString(), "none");
  EXPECT_EQ(ProtectionLevel::Signing(v1::AES_128_GMAC).ToString(), "signing AES-128-GMAC");
  EXPECT_EQ(ProtectionLevel::Encryption(v1::AES_256_GCM).ToString(), "encryption AES-256-GCM");
  ProtectionLevel both = ProtectionLevel::Both(v1::AES_128_CMAC, v1::AES_128_CCM);
  EXPECT_EQ(both.ToString(), "signing AES-128-CMAC + encryption AES-128-CCM");
  EXPECT_EQ(both.effective_algorithm(), v1::AES_128_CCM);
  EXPECT_EQ(ProtectionLevel::Signing(v1::HMAC_SHA256).effective_algorithm(), v1::HMAC_SHA256);
  EXPECT_EQ(ProtectionLevel::None().effective_algorithm(), v1::CRYPTO_ALGORITHM_UNSPECIFIED);
  EXPECT_EQ(StandardLevels().size(), 9u);
}

TEST(DialectAlgorithmsTest, SigningAndCipherPerDialect) {
  v1::Posture samba;
  samba.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  v1::Posture windows;
  windows.mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
  v1::Posture restricted = windows;
  // HMAC-MD5 is never valid on SMB2+, so the first usable entry wins.
  restricted.mutable_server()->add_signing_algorithms(v1::HMAC_MD5);
  restricted.mutable_server()->add_signing_algorithms(v1::AES_128_GMAC);
  restricted.mutable_server()->add_encryption_ciphers(v1::AES_256_GCM);
  struct Case {
    const char* name;
    const v1::Posture* posture;
    Dialect dialect;
    CryptoAlgorithm signing;
    CryptoAlgorithm cipher;
  } cases[] = {
      {"2.0.2", &windows, v1::DIALECT_SMB_2_0_2, v1::HMAC_SHA256, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
      {"2.1", &samba, v1::DIALECT_SMB_2_1, v1::HMAC_SHA256, v1::CRYPTO_ALGORITHM_UNSPECIFIED},
      {"3.0", &windows, v1::DIALECT_SMB_3_0, v1::AES_128_CMAC, v1::AES_128_CCM},
      {"3.0.2", &samba, v1::DIALECT_SMB_3_0_2, v1::AES_128_CMAC, v1::AES_128_CCM},
      {"3.1.1 samba", &samba, v1::DIALECT_SMB_3_1_1, v1::AES_128_GMAC, v1::AES_128_GCM},
      {"3.1.1 windows", &windows, v1::DIALECT_SMB_3_1_1, v1::AES_128_CMAC, v1::AES_128_GCM},
      {"3.1.1 lists", &restricted, v1::DIALECT_SMB_3_1_1, v1::AES_128_GMAC, v1::AES_256_GCM},
      {"3.0 ignores lists", &restricted, v1::DIALECT_SMB_3_0, v1::AES_128_CMAC, v1::AES_128_CCM},
      {"smb1", &windows, v1::DIALECT_SMB1, v1::CRYPTO_ALGORITHM_UNSPECIFIED,
       v1::CRYPTO_ALGORITHM_UNSPECIFIED},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SigningAlgorithmFor(c.dialect, *c.posture), c.signing);
    EXPECT_EQ(CipherFor(c.dialect, *c.posture), c.cipher);
  }
}

TEST(DialectAlgorithmsTest, TypicalDialect) {
  v1::Posture p;
  EXPECT_EQ(TypicalDialect(p), v1::DIALECT_SMB_3_1_1);
  p.mutable_server()->set_max_dialect(v1::DIALECT_SMB_3_0_2);
  EXPECT_EQ(TypicalDialect(p), v1::DIALECT_SMB_3_0_2);
  p.add_sessions()->set_dialect(v1::DIALECT_SMB_2_1);
  p.add_sessions()->set_dialect(v1::DIALECT_SMB_2_1);
  p.add_sessions()->set_dialect(v1::DIALECT_SMB_3_1_1);
  p.add_sessions();  // unknown dialect: not counted
  EXPECT_EQ(TypicalDialect(p), v1::DIALECT_SMB_2_1);
}

TEST(FitCryptoCostsTest, RecoversPerCallAndPerByteCost) {
  v1::Posture p;
  AddRows(p, v1::AES_128_GCM, 0.4e-6, 1 / 4e9);
  AddRows(p, v1::AES_128_GCM, 0.4e-6, 1 / 4e9, /*threads=*/4, /*speedup=*/3.5);
  AddRows(p, v1::HMAC_SHA256, 0, 1 / 1.5e9);
  // Garbage rows are ignored.
  v1::Benchmark* bad = p.add_benchmarks();
  bad->set_algorithm(v1::AES_128_CCM);
  bad->set_buffer_bytes(4096);
  bad->set_bytes_per_second(-1);
  v1::Benchmark* nan = p.add_benchmarks();
  nan->set_algorithm(v1::AES_128_CCM);
  nan->set_buffer_bytes(65536);
  nan->set_bytes_per_second(std::nan(""));

  auto costs = FitCryptoCosts(p.benchmarks());
  ASSERT_EQ(costs.size(), 2u);
  const CryptoCost& gcm = costs[v1::AES_128_GCM];
  EXPECT_TRUE(gcm.measured);
  EXPECT_NEAR(gcm.seconds_per_call, 0.4e-6, 1e-12);
  EXPECT_NEAR(gcm.seconds_per_byte, 1 / 4e9, 1e-15);
  EXPECT_NEAR(gcm.all_core_speedup, 3.5, 1e-9);
  EXPECT_NEAR(costs[v1::HMAC_SHA256].seconds_per_call, 0, 1e-12);
  EXPECT_NEAR(costs[v1::HMAC_SHA256].all_core_speedup, 1, 1e-12);
}

TEST(FitCryptoCostsTest, OneDisturbedCellDoesNotMakeUpAPerCallCost) {
  v1::Posture p;
  AddRows(p, v1::AES_128_GCM, 0.3e-6, 1 / 4e9);
  // The 4 KiB cell ran 12x slow (first cell on a busy host).
  p.mutable_benchmarks(0)->set_bytes_per_second(p.benchmarks(0).bytes_per_second() / 12);
  auto costs = FitCryptoCosts(p.benchmarks());
  EXPECT_NEAR(costs[v1::AES_128_GCM].seconds_per_call, 0.3e-6, 0.05e-6);
  EXPECT_NEAR(costs[v1::AES_128_GCM].seconds_per_byte, 1 / 4e9, 1e-13);
}

TEST(ProfileFromPostureTest, LabelsWinOverNics) {
  v1::Posture p = BenchedPosture();
  auto& labels = *p.mutable_host()->mutable_labels();
  labels["link_speed"] = "10Gbit";
  labels["rtt_ms"] = "2.5";
  labels["wan"] = "yes";
  p.add_nics()->set_link_speed_bps(1'000'000'000);
  HostProfile h = ProfileFromPosture(p);
  EXPECT_EQ(h.hostname, "fs01");
  EXPECT_EQ(h.logical_cores, 8u);
  EXPECT_DOUBLE_EQ(h.link_bits_per_second, 1e10);
  EXPECT_DOUBLE_EQ(h.rtt_seconds, 0.0025);
  EXPECT_TRUE(h.wan);
  EXPECT_EQ(h.channels, 1u);
  EXPECT_EQ(h.crypto.size(), 7u);
  EXPECT_TRUE(h.assumptions.empty()) << h.assumptions[0];
}

TEST(ProfileFromPostureTest, MultichannelUsesEveryNicAtTopSpeed) {
  v1::Posture p = BenchedPosture();
  p.mutable_server()->set_multichannel_enabled(true);
  for (uint64_t speed : {10'000'000'000ull, 10'000'000'000ull, 1'000'000'000ull}) {
    p.add_nics()->set_link_speed_bps(speed);
  }
  HostProfile h = ProfileFromPosture(p);
  EXPECT_EQ(h.channels, 2u);
  EXPECT_DOUBLE_EQ(h.link_bits_per_second, 2e10);

  p.mutable_server()->set_multichannel_enabled(false);
  h = ProfileFromPosture(p);
  EXPECT_EQ(h.channels, 1u);
  EXPECT_DOUBLE_EQ(h.link_bits_per_second, 1e10);
}

TEST(ProfileFromPostureTest, MultichannelPossibleFromTheNics) {
  using M = HostProfile::Multichannel;
  struct NicSpec {
    std::optional<bool> up;
    std::optional<bool> rss_capable;
    std::optional<bool> rss_enabled;
    std::optional<uint32_t> queues;
  };
  struct Case {
    const char* what;
    std::vector<NicSpec> nics;
    M want;
  };
  const std::optional<bool> kYes = true, kNo = false, kUnset;
  const std::optional<uint32_t> kNone;
  std::vector<Case> cases = {
      {"no NICs reported", {}, M::kUnknown},
      {"two NICs up", {{kYes, kUnset, kUnset, kNone}, {kYes, kUnset, kUnset, kNone}}, M::kPossible},
      {"two NICs, one down", {{kYes, kNo, kNo, 1u}, {kNo, kUnset, kUnset, kNone}}, M::kNotPossible},
      {"two NICs of unknown state (SMB's list)",
       {{kUnset, kNo, kUnset, kNone}, {kUnset, kNo, kUnset, kNone}},
       M::kPossible},
      {"one NIC, RSS over 8 queues", {{kYes, kYes, kYes, 8u}}, M::kPossible},
      {"one NIC, RSS capable, queues not reported", {{kYes, kYes, kUnset, kNone}}, M::kPossible},
      {"one vNIC, one queue", {{kYes, kUnset, kNo, 1u}}, M::kNotPossible},
      {"one NIC, RSS switched off", {{kYes, kYes, kNo, 8u}}, M::kNotPossible},
      {"one NIC, SMB says not RSS capable", {{kUnset, kNo, kUnset, kNone}}, M::kNotPossible},
      {"one NIC, nothing about RSS", {{kYes, kUnset, kUnset, kNone}}, M::kUnknown},
  };
  for (const Case& c : cases) {
    v1::Posture p = BenchedPosture();
    for (const NicSpec& spec : c.nics) {
      v1::Nic* nic = p.add_nics();
      if (spec.up) nic->set_up(*spec.up);
      if (spec.rss_capable) nic->set_rss_capable(*spec.rss_capable);
      if (spec.rss_enabled) nic->set_rss_enabled(*spec.rss_enabled);
      if (spec.queues) nic->set_rss_queues(*spec.queues);
    }
    EXPECT_EQ(MultichannelFromNics(p), c.want) << c.what;
    EXPECT_EQ(ProfileFromPosture(p).multichannel, c.want) << c.what;
  }
  EXPECT_EQ(MultichannelText(M::kNotPossible),
            "not possible (one NIC without RSS: crypto on one core)");
}

TEST(ProfileFromPostureTest, ANicKnownDownCarriesNoTraffic) {
  v1::Posture p = BenchedPosture();
  p.mutable_server()->set_multichannel_enabled(true);
  v1::Nic* down = p.add_nics();
  down->set_link_speed_bps(25'000'000'000);  // the last speed a driver remembered
  down->set_up(false);
  v1::Nic* up = p.add_nics();
  up->set_link_speed_bps(10'000'000'000);
  up->set_up(true);
  HostProfile h = ProfileFromPosture(p);
  EXPECT_DOUBLE_EQ(h.link_bits_per_second, 1e10);
  EXPECT_EQ(h.channels, 1u);
}

TEST(ProfileFromPostureTest, BadOrMissingInputsAreNamedAssumptions) {
  v1::Posture p;
  auto& labels = *p.mutable_host()->mutable_labels();
  labels["link_speed"] = "warp9";
  labels["rtt_ms"] = "-3";
  HostProfile h = ProfileFromPosture(p);
  std::string all;
  for (const std::string& a : h.assumptions) all += a + "\n";
  EXPECT_THAT(all, HasSubstr("link_speed: 'warp9'"));
  EXPECT_THAT(all, HasSubstr("rtt_ms: '-3'"));
  EXPECT_THAT(all, HasSubstr("logical cores unknown"));
  EXPECT_THAT(all, HasSubstr("link speed unknown: assumed 1 Gbit"));
  EXPECT_THAT(all, HasSubstr("no benchmark for"));
  EXPECT_TRUE(h.crypto.empty());
}

TEST(ProfileFromPostureTest, RttFromLabelElseSessionsMinRttElseDefault) {
  struct Case {
    const char* what;
    const char* label;                                 // rtt_ms, or nullptr
    std::vector<std::optional<uint32_t>> min_rtts_us;  // one session each
    double want_seconds;
    const char* want_source;
  };
  const std::optional<uint32_t> kNone;
  std::vector<Case> cases = {
      {"the label wins over the sessions", "2.5", {60'000u, 61'000u}, 0.0025, "label rtt_ms"},
      {"one session", nullptr, {30'120u}, 0.03012, "median min_rtt of 1 session"},
      {"odd count: the middle one",
       nullptr,
       {900u, 60'000u, 400u},
       0.0009,
       "median min_rtt of 3 sessions"},
      {"even count: the mean of the middle two",
       nullptr,
       {400u, 600u, 800u, 90'000u},
       0.0007,
       "median min_rtt of 4 sessions"},
      {"sessions without a reading are left out",
       nullptr,
       {kNone, 500u, 0u},
       0.0005,
       "median min_rtt of 1 session"},
      // Unknown (0): Predict() uses the LAN default.
      {"no reading at all: the LAN default", nullptr, {kNone, kNone}, 0, "LAN default"},
  };
  for (const Case& c : cases) {
    v1::Posture p = BenchedPosture();
    if (c.label != nullptr) {
      (*p.mutable_host()->mutable_labels())["rtt_ms"] = c.label;
    }
    for (const std::optional<uint32_t>& us : c.min_rtts_us) {
      v1::Session* s = p.add_sessions();
      if (us) s->set_min_rtt_us(*us);
    }
    HostProfile h = ProfileFromPosture(p);
    EXPECT_NEAR(h.rtt_seconds, c.want_seconds, 1e-12) << c.what;
    EXPECT_EQ(h.rtt_source, c.want_source) << c.what;
    bool assumed = false;
    for (const std::string& a : h.assumptions) assumed = assumed || a.find("RTT unknown") == 0;
    EXPECT_EQ(assumed, std::string(c.want_source) == "LAN default") << c.what;
  }
}

TEST(ProfileFromPostureTest, MeasuredRttFeedsTheLatencyBound) {
  v1::Posture p = BenchedPosture();
  (*p.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  p.add_sessions()->set_min_rtt_us(30'000);
  Prediction measured =
      Predict(ProfileFromPosture(p), ProtectionLevel::None(), Workload::LargeSequential());
  (*p.mutable_host()->mutable_labels())["rtt_ms"] = "30";
  Prediction labelled =
      Predict(ProfileFromPosture(p), ProtectionLevel::None(), Workload::LargeSequential());
  EXPECT_EQ(measured.limit, Prediction::Limit::kLatency);
  EXPECT_DOUBLE_EQ(measured.throughput_bytes_per_second, labelled.throughput_bytes_per_second);
}

TEST(PredictTest, OneNicWithoutRssEncryptsOnOneCore) {
  // A fast link and 8 or 64 cores: with one channel possible the cipher runs on one core, so
  // the CPU bound is one core's rate whatever the core count.
  v1::Posture p = BenchedPosture();
  (*p.mutable_host()->mutable_labels())["rtt_ms"] = "0.05";
  p.mutable_server()->set_multichannel_enabled(true);
  v1::Nic* nic = p.add_nics();
  nic->set_link_speed_bps(200'000'000'000);
  nic->set_up(true);
  nic->set_rss_capable(false);
  nic->set_rss_queues(1);
  HostProfile h = ProfileFromPosture(p);
  ASSERT_EQ(h.multichannel, HostProfile::Multichannel::kNotPossible);
  const ProtectionLevel ccm = ProtectionLevel::Encryption(v1::AES_128_CCM);
  Prediction eight = Predict(h, ccm, Workload::LargeSequential());
  EXPECT_EQ(eight.limit, Prediction::Limit::kCpu);
  EXPECT_NEAR(eight.throughput_bytes_per_second * eight.server_cpu_seconds_per_byte, 1, 1e-9);
  h.logical_cores = 64;
  EXPECT_DOUBLE_EQ(Predict(h, ccm, Workload::LargeSequential()).throughput_bytes_per_second,
                   eight.throughput_bytes_per_second);
  // A second NIC up makes two channels possible: two cores' worth.
  const v1::Nic second = *nic;
  *p.add_nics() = second;
  HostProfile two = ProfileFromPosture(p);
  ASSERT_EQ(two.multichannel, HostProfile::Multichannel::kPossible);
  EXPECT_NEAR(Predict(two, ccm, Workload::LargeSequential()).throughput_bytes_per_second /
                  eight.throughput_bytes_per_second,
              2, 1e-9);
}

TEST(ClientKindTest, ParseAndName) {
  for (ClientKind c : {ClientKind::kWindows, ClientKind::kSmbclient}) {
    absl::StatusOr<ClientKind> parsed = ParseClientKind(ClientKindName(c));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c);
  }
  absl::StatusOr<ClientKind> bad = ParseClientKind("macos");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("client: 'macos'"));
}

TEST(PredictTest, TheClientSetsTheWindow) {
  HostProfile h;
  h.link_bits_per_second = 1e9;
  Workload windows = Workload::LargeSequential();
  Workload smbclient = Workload::LargeSequential();
  smbclient.client = ClientKind::kSmbclient;
  const ModelParameters& p = DefaultParameters();
  // smbclient's window: 2/3 of Linux's default 4 MiB send buffer (parameters.cc).
  EXPECT_NEAR(p.WindowBytes(ClientKind::kSmbclient), 2.796e6, 1e3);
  EXPECT_DOUBLE_EQ(p.WindowBytes(ClientKind::kWindows), p.window_bytes);
  struct Case {
    double rtt_ms;
    Prediction::Limit windows_limit;
    double windows_mbps;
    Prediction::Limit smbclient_limit;
    double smbclient_mbps;
  } cases[] = {
      // The published case is the Windows client's: 108 -> 31 MB/s.
      {0.25, Prediction::Limit::kLink, 108, Prediction::Limit::kLink, 108},
      {30, Prediction::Limit::kLatency, 31, Prediction::Limit::kLatency, 93.2},
      {60, Prediction::Limit::kLatency, 15.5, Prediction::Limit::kLatency, 46.6},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rtt_ms);
    h.rtt_seconds = c.rtt_ms / 1000;
    Prediction w = Predict(h, ProtectionLevel::None(), windows);
    Prediction s = Predict(h, ProtectionLevel::None(), smbclient);
    EXPECT_EQ(w.limit, c.windows_limit);
    EXPECT_NEAR(w.throughput_bytes_per_second / 1e6, c.windows_mbps, 0.1);
    EXPECT_EQ(s.limit, c.smbclient_limit);
    EXPECT_NEAR(s.throughput_bytes_per_second / 1e6, c.smbclient_mbps, 0.1);
  }
}

// smbclient pays the crypto of both ends in series with the transfer (parameters.cc): through a
// link or a window that sets the pace, the time per byte is the wire's (or the window's) plus
// the server's and the client's crypto per byte. The Windows client's predictions stay as they
// were: its crypto hides behind the transfer.
TEST(PredictTest, SmbclientPaysCryptoInSeriesWithTheTransfer) {
  HostProfile h;
  h.link_bits_per_second = 1e9;
  h.logical_cores = 2;
  const ModelParameters& p = DefaultParameters();
  ASSERT_TRUE(p.CryptoInSeries(ClientKind::kSmbclient));
  ASSERT_FALSE(p.CryptoInSeries(ClientKind::kWindows));
  Workload windows = Workload::LargeSequential();
  Workload smbclient = Workload::LargeSequential();
  smbclient.client = ClientKind::kSmbclient;
  const double io = static_cast<double>(smbclient.io_bytes);
  for (double rtt_ms : {0.5, 60.0}) {
    SCOPED_TRACE(rtt_ms);
    h.rtt_seconds = rtt_ms / 1000;
    const Prediction none = Predict(h, ProtectionLevel::None(), smbclient);
    for (const ProtectionLevel& level :
         {ProtectionLevel::Signing(v1::AES_128_CMAC), ProtectionLevel::Encryption(v1::AES_128_CCM),
          ProtectionLevel::Encryption(v1::AES_128_GCM)}) {
      SCOPED_TRACE(level.ToString());
      const Prediction s = Predict(h, level, smbclient);
      // The crypto per byte of each end: what the level adds to its CPU per byte.
      const double crypto = (s.server_cpu_seconds_per_byte - none.server_cpu_seconds_per_byte) +
                            (s.client_cpu_seconds_per_byte - none.client_cpu_seconds_per_byte);
      ASSERT_GT(crypto, 0);
      // Encryption also carries the transform header on the wire (and in the window).
      const double wire_share = level.is_encrypted() ? (io + p.transform_header_bytes) / io : 1;
      const double expected = rtt_ms < 1
                                  ? 1 / (wire_share / none.throughput_bytes_per_second + crypto)
                                  : 1 / (1 / none.throughput_bytes_per_second + crypto);
      EXPECT_EQ(s.limit, none.limit);
      EXPECT_NEAR(s.throughput_bytes_per_second / expected, 1, 1e-9);
      EXPECT_LT(s.throughput_bytes_per_second, none.throughput_bytes_per_second);
      // The Windows client: the link's (or the window's) pace whatever the protection.
      const Prediction w = Predict(h, level, windows);
      const Prediction w_none = Predict(h, ProtectionLevel::None(), windows);
      EXPECT_NEAR(w.throughput_bytes_per_second * wire_share / w_none.throughput_bytes_per_second,
                  1, rtt_ms < 1 ? 1e-9 : 1e-4);
    }
  }
  // The validation's case (1 Gbit, 0.5 ms): AES-128-CCM, a few ns/B at the two ends over
  // 9.26 ns/B of wire, carries well below the link's 108 MB/s.
  h.rtt_seconds = 0.0005;
  const double link = Predict(h, ProtectionLevel::None(), smbclient).throughput_bytes_per_second;
  const double ccm = Predict(h, ProtectionLevel::Encryption(v1::AES_128_CCM), smbclient)
                         .throughput_bytes_per_second;
  EXPECT_NEAR(link / 1e6, 108, 0.1);
  EXPECT_LT(ccm, 0.9 * link);
  EXPECT_GT(ccm, 0.5 * link);
  // A slower crypto costs more throughput: AES-256-CCM below AES-128-CCM below AES-128-GCM.
  EXPECT_LT(Predict(h, ProtectionLevel::Encryption(v1::AES_256_CCM), smbclient)
                .throughput_bytes_per_second,
            ccm);
  EXPECT_GT(Predict(h, ProtectionLevel::Encryption(v1::AES_128_GCM), smbclient)
                .throughput_bytes_per_second,
            ccm);
}

TEST(PredictTest, CpuBoundThroughputFollowsCryptoCost) {
  HostProfile h = FastLinkHost();
  Workload large = Workload::LargeSequential();
  // Cheapest to dearest per byte in BenchedPosture.
  const ProtectionLevel order[] = {
      ProtectionLevel::None(),
      ProtectionLevel::Signing(v1::AES_128_GMAC),
      ProtectionLevel::Encryption(v1::AES_128_GCM),
      ProtectionLevel::Signing(v1::HMAC_SHA256),
      ProtectionLevel::Encryption(v1::AES_128_CCM),
      ProtectionLevel::Encryption(v1::AES_256_CCM),
  };
  Prediction previous = Predict(h, order[0], large);
  EXPECT_EQ(previous.limit, Prediction::Limit::kCpu);
  for (size_t i = 1; i < std::size(order); ++i) {
    SCOPED_TRACE(order[i].ToString());
    Prediction p = Predict(h, order[i], large);
    EXPECT_EQ(p.limit, Prediction::Limit::kCpu);
    EXPECT_LT(p.throughput_bytes_per_second, previous.throughput_bytes_per_second);
    EXPECT_GT(p.server_cpu_seconds_per_byte, previous.server_cpu_seconds_per_byte);
    previous = p;
  }
}

TEST(PredictTest, LinkBoundThroughputStaysAndCpuRises) {
  v1::Posture posture = BenchedPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  HostProfile h = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  Prediction none = Predict(h, ProtectionLevel::None(), large);
  Prediction ccm = Predict(h, ProtectionLevel::Encryption(v1::AES_128_CCM), large);
  EXPECT_EQ(none.limit, Prediction::Limit::kLink);
  EXPECT_EQ(ccm.limit, Prediction::Limit::kLink);
  // Only the 52-byte transform header per 1 MiB message differs on the wire.
  EXPECT_NEAR(ccm.throughput_bytes_per_second / none.throughput_bytes_per_second, 1, 1e-4);
  EXPECT_GT(ccm.cpu_fraction, none.cpu_fraction);
  // The published 1 Gbit LAN figure (108 MB/s at 0.25 ms) is what the link part reproduces.
  EXPECT_NEAR(none.throughput_bytes_per_second / 1e6, 108, 108 * 0.1);
}

TEST(PredictTest, LatencyBoundReproducesPublishedWanFigure) {
  v1::Posture posture = BenchedPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  (*posture.mutable_host()->mutable_labels())["rtt_ms"] = "30";
  Prediction p =
      Predict(ProfileFromPosture(posture), ProtectionLevel::None(), Workload::LargeSequential());
  EXPECT_EQ(p.limit, Prediction::Limit::kLatency);
  EXPECT_NEAR(p.throughput_bytes_per_second / 1e6, 31, 31 * 0.1);
}

TEST(PredictTest, MultichannelMultipliesLinkBoundThroughput) {
  v1::Posture posture = BenchedPosture();
  posture.mutable_server()->set_multichannel_enabled(true);
  posture.add_nics()->set_link_speed_bps(1'000'000'000);
  HostProfile one = ProfileFromPosture(posture);
  posture.add_nics()->set_link_speed_bps(1'000'000'000);
  HostProfile two = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  double t1 = Predict(one, ProtectionLevel::None(), large).throughput_bytes_per_second;
  double t2 = Predict(two, ProtectionLevel::None(), large).throughput_bytes_per_second;
  EXPECT_NEAR(t2 / t1, 2, 1e-9);
}

TEST(PredictTest, EncryptionSupersedesSigning) {
  HostProfile h = FastLinkHost();
  for (const Workload& w : {Workload::LargeSequential(), Workload::SmallFiles()}) {
    Prediction enc = Predict(h, ProtectionLevel::Encryption(v1::AES_128_GCM), w);
    Prediction both = Predict(h, ProtectionLevel::Both(v1::HMAC_SHA256, v1::AES_128_GCM), w);
    EXPECT_DOUBLE_EQ(enc.throughput_bytes_per_second, both.throughput_bytes_per_second);
    EXPECT_DOUBLE_EQ(enc.cpu_fraction, both.cpu_fraction);
  }
}

TEST(PredictTest, SmallFilesAreBoundByRoundTrips) {
  v1::Posture posture = BenchedPosture();
  auto& labels = *posture.mutable_host()->mutable_labels();
  Workload small = Workload::SmallFiles();
  labels["rtt_ms"] = "0.25";
  Prediction lan = Predict(ProfileFromPosture(posture), ProtectionLevel::None(), small);
  labels["rtt_ms"] = "30";
  Prediction wan = Predict(ProfileFromPosture(posture), ProtectionLevel::None(), small);
  EXPECT_GT(lan.files_per_second, 5 * wan.files_per_second);
  EXPECT_EQ(wan.limit, Prediction::Limit::kLatency);
  EXPECT_DOUBLE_EQ(wan.throughput_bytes_per_second,
                   wan.files_per_second * static_cast<double>(small.file_bytes));
  // Five requests per file (4 + one read) at 30 ms each: under 7 files per second.
  EXPECT_LT(wan.files_per_second, 1 / (5 * 0.030));
}

TEST(PredictTest, ClientOnHostAddsItsCpu) {
  v1::Posture posture = BenchedPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";  // not CPU bound
  HostProfile h = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  Prediction remote = Predict(h, ProtectionLevel::Encryption(v1::AES_128_GCM), large);
  h.client_on_host = true;
  Prediction local = Predict(h, ProtectionLevel::Encryption(v1::AES_128_GCM), large);
  EXPECT_GT(local.cpu_fraction, remote.cpu_fraction);
  EXPECT_LE(local.throughput_bytes_per_second, remote.throughput_bytes_per_second);
}

TEST(ProfileFromPostureTest, PageFaultCostFromTheMemoryBenchmark) {
  v1::Posture posture = BenchedPosture();
  posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  auto assumed = [](const HostProfile& h,
                    const std::string& what = "page fault cost not measured") {
    for (const std::string& a : h.assumptions) {
      if (a.find(what) != std::string::npos) return true;
    }
    return false;
  };
  // Not measured: no fault term, and a Samba host says so.
  HostProfile h = ProfileFromPosture(posture);
  EXPECT_EQ(h.page_fault_seconds, 0);
  EXPECT_TRUE(assumed(h));
  posture.mutable_memory_benchmark()->set_page_fault_seconds(12.5e-6);
  posture.mutable_memory_benchmark()->set_page_bytes(16384);
  h = ProfileFromPosture(posture);
  EXPECT_EQ(h.page_fault_seconds, 12.5e-6);
  EXPECT_EQ(h.page_bytes, 16384);
  EXPECT_FALSE(assumed(h));
  // A figure no fault costs is not taken for one, and the assumption names it.
  posture.mutable_memory_benchmark()->set_page_fault_seconds(2);
  h = ProfileFromPosture(posture);
  EXPECT_EQ(h.page_fault_seconds, 0);
  EXPECT_TRUE(assumed(h, "page fault cost of 2 s refused (not within 0 to 1 ms)"));
  posture.mutable_memory_benchmark()->set_page_fault_seconds(-1.5e-6);
  EXPECT_TRUE(assumed(ProfileFromPosture(posture), "page fault cost of -1.5e-06 s refused"));
}

TEST(PredictTest, SambaPaysItsPageFaultsPerByteAtTheHostsCost) {
  v1::Posture posture = BenchedPosture();
  posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  const HostProfile without = ProfileFromPosture(posture);
  posture.mutable_memory_benchmark()->set_page_fault_seconds(10e-6);
  posture.mutable_memory_benchmark()->set_page_bytes(4096);
  HostProfile with = ProfileFromPosture(posture);
  ModelParameters p = DefaultParameters();
  p.samba_server_faults_per_page = 0.25;
  p.samba_server_ccm_faults_per_page = 1.0;
  p.smbclient_faults_per_page = 0.125;
  p.smbclient_ccm_faults_per_page = 2.0;
  const Workload large = Workload::LargeSequential();
  const double per_fault_byte = 10e-6 / 4096;
  for (auto [level, server_faults] :
       {std::pair{ProtectionLevel::None(), 0.25},
        std::pair{ProtectionLevel::Encryption(v1::AES_128_GCM), 0.25},
        std::pair{ProtectionLevel::Encryption(v1::AES_128_CCM), 1.0},
        std::pair{ProtectionLevel::Encryption(v1::AES_256_CCM), 1.0}}) {
    SCOPED_TRACE(level.ToString());
    Prediction a = Predict(without, level, large, p);
    Prediction b = Predict(with, level, large, p);
    EXPECT_NEAR(b.server_cpu_seconds_per_byte - a.server_cpu_seconds_per_byte,
                server_faults * per_fault_byte, 1e-15);
    // The client's faults count only where the client runs on the host.
    EXPECT_NEAR(b.client_cpu_seconds_per_byte, a.client_cpu_seconds_per_byte, 1e-15);
  }
  // smbclient on the host: its faults at the same cost.
  with.client_on_host = true;
  HostProfile without_on_host = without;
  without_on_host.client_on_host = true;
  const ProtectionLevel ccm = ProtectionLevel::Encryption(v1::AES_128_CCM);
  EXPECT_NEAR(Predict(with, ccm, large, p).client_cpu_seconds_per_byte -
                  Predict(without_on_host, ccm, large, p).client_cpu_seconds_per_byte,
              2.0 * per_fault_byte, 1e-15);
  // A Windows server serves from the kernel: no fault term.
  posture.mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
  HostProfile windows = ProfileFromPosture(posture);
  posture.clear_memory_benchmark();
  HostProfile windows_unmeasured = ProfileFromPosture(posture);
  EXPECT_EQ(Predict(windows, ccm, large, p).server_cpu_seconds_per_byte,
            Predict(windows_unmeasured, ccm, large, p).server_cpu_seconds_per_byte);
}

TEST(PredictTest, UnbenchmarkedAlgorithmUsesReferenceCost) {
  v1::Posture bare;
  (*bare.mutable_host()->mutable_labels())["link_speed"] = "400Gbit";
  HostProfile h = ProfileFromPosture(bare);
  ASSERT_TRUE(h.crypto.empty());
  Workload large = Workload::LargeSequential();
  Prediction none = Predict(h, ProtectionLevel::None(), large);
  Prediction ccm = Predict(h, ProtectionLevel::Encryption(v1::AES_128_CCM), large);
  EXPECT_LT(ccm.throughput_bytes_per_second, none.throughput_bytes_per_second);
  // Plugging the reference cost in by hand gives the same answer.
  h.crypto[v1::AES_128_CCM] = DefaultParameters().default_crypto.at(v1::AES_128_CCM);
  Prediction explicit_ccm = Predict(h, ProtectionLevel::Encryption(v1::AES_128_CCM), large);
  EXPECT_DOUBLE_EQ(explicit_ccm.throughput_bytes_per_second, ccm.throughput_bytes_per_second);
}

TEST(EstimateChangeCostTest, SummaryAndPercentagesAgree) {
  v1::Posture posture = BenchedPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  ChangeCost cost = EstimateChangeCost(posture, ProtectionLevel::None(),
                                       ProtectionLevel::Encryption(v1::AES_128_CCM));
  ASSERT_EQ(cost.workloads.size(), 2u);
  EXPECT_EQ(cost.workloads[0].workload.kind, Workload::Kind::kLargeSequential);
  EXPECT_EQ(cost.workloads[1].workload.kind, Workload::Kind::kSmallFiles);
  for (const WorkloadCost& w : cost.workloads) {
    EXPECT_NEAR(
        w.throughput_change_percent,
        (w.after.throughput_bytes_per_second / w.before.throughput_bytes_per_second - 1) * 100,
        1e-9);
    EXPECT_NEAR(w.cpu_change_points, (w.after.cpu_fraction - w.before.cpu_fraction) * 100, 1e-9);
    EXPECT_GT(w.cpu_change_points, 0);
    EXPECT_LE(w.throughput_change_percent, 0);
  }
  EXPECT_THAT(cost.summary,
              ::testing::MatchesRegex(
                  "enabling encryption AES-128-CCM on fs01: ~([-+][0-9.]+%|0%) throughput on "
                  "large files, ~\\+[0-9.]+% CPU at 1 Gbit; small files ~-[0-9.]+%"));
}

TEST(EstimateChangeCostTest, NoChangeIsZero) {
  v1::Posture posture = BenchedPosture();
  ProtectionLevel gmac = ProtectionLevel::Signing(v1::AES_128_GMAC);
  ChangeCost cost = EstimateChangeCost(posture, gmac, gmac);
  for (const WorkloadCost& w : cost.workloads) {
    EXPECT_DOUBLE_EQ(w.throughput_change_percent, 0);
    EXPECT_DOUBLE_EQ(w.cpu_change_points, 0);
  }
  EXPECT_THAT(cost.summary, HasSubstr("changing signing AES-128-GMAC to signing AES-128-GMAC"));
  EXPECT_THAT(cost.summary, HasSubstr("~0% throughput on large files"));
}

TEST(EstimateChangeCostTest, WanSummaryNamesTheRtt) {
  v1::Posture posture = BenchedPosture();
  (*posture.mutable_host()->mutable_labels())["wan"] = "true";
  ChangeCost cost = EstimateChangeCost(posture, ProtectionLevel::Signing(v1::AES_128_CMAC),
                                       ProtectionLevel::None());
  EXPECT_THAT(cost.summary, HasSubstr("disabling signing AES-128-CMAC on fs01"));
  EXPECT_THAT(cost.summary, HasSubstr("at 1 Gbit, RTT 30 ms"));
}

// ---------------------------------------------------------------------------------------------
// Compression.

void AddCompressionRow(v1::Posture& posture, v1::CompressionAlgorithm algorithm,
                       const std::string& corpus, double ratio, double compress_bps,
                       double decompress_bps, uint64_t input_bytes = 1 << 20,
                       uint32_t threads = 1) {
  *posture.add_compression_benchmarks() =
      CompressionRow(algorithm, corpus, ratio, compress_bps, decompress_bps, input_bytes, threads);
}

// BenchedPosture plus a compression benchmark: XPRESS Huffman at 400 MB/s (2.5:1) on vm-disk,
// 150 MB/s (5:1) on text, 250 MB/s (1.0:1) on compressed data.
v1::Posture CompressingPosture() {
  v1::Posture p = BenchedPosture();
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.5, 400e6, 1200e6);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "text", 5, 150e6, 900e6);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "compressed", 1.0, 250e6, 4000e6);
  AddCompressionRow(p, v1::COMPRESSION_LZ4, "vm-disk", 2.0, 2000e6, 4000e6);
  return p;
}

TEST(FitCompressionCostsTest, XpressHuffmanFirstLargestInputAndLz4Fallback) {
  v1::Posture p;
  AddCompressionRow(p, v1::COMPRESSION_LZ4, "vm-disk", 2.0, 2000e6, 4000e6);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.4, 100e6, 500e6, 1 << 16);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 2.5, 400e6, 1000e6, 1 << 20);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "vm-disk", 9, 9e9, 9e9, 1 << 24, 4);
  AddCompressionRow(p, v1::COMPRESSION_LZ4, "text", 3, 1000e6, 3000e6);
  AddCompressionRow(p, v1::COMPRESSION_LZ77_HUFFMAN, "broken", 2, 0, 1e9);
  AddCompressionRow(p, v1::COMPRESSION_LZNT1, "other", 2, 1e8, 1e9);
  auto costs = FitCompressionCosts(p.compression_benchmarks());
  ASSERT_EQ(costs.size(), 2u);
  const CompressionCost& vm = costs.at("vm-disk");
  EXPECT_EQ(vm.algorithm, v1::COMPRESSION_LZ77_HUFFMAN);
  EXPECT_DOUBLE_EQ(vm.ratio, 2.5);  // the 1 MiB one-thread row, not the 4-thread one
  EXPECT_DOUBLE_EQ(vm.compress_seconds_per_byte, 1 / 400e6);
  EXPECT_DOUBLE_EQ(vm.decompress_seconds_per_byte, 1 / 1000e6);
  EXPECT_TRUE(vm.measured);
  EXPECT_EQ(costs.at("text").algorithm, v1::COMPRESSION_LZ4);

  HostProfile h = ProfileFromPosture(p);
  EXPECT_THAT(::testing::PrintToString(h.assumptions),
              HasSubstr("compression of text: LZ4 figures (no XPRESS Huffman benchmark)"));
}

TEST(FitCompressionCostsTest, NearestCorpusGivesTheSpeedForASampledRatio) {
  HostProfile h = ProfileFromPosture(CompressingPosture());
  CompressionCost c = CompressionCostForRatio(h, 2.2, DefaultParameters());
  EXPECT_EQ(c.corpus, "vm-disk");
  EXPECT_DOUBLE_EQ(c.ratio, 2.2);
  EXPECT_DOUBLE_EQ(c.compress_seconds_per_byte, 1 / 400e6);
  EXPECT_EQ(CompressionCostForRatio(h, 1.05, DefaultParameters()).corpus, "compressed");
  EXPECT_EQ(CompressionCostForRatio(h, 7, DefaultParameters()).corpus, "text");
  EXPECT_EQ(CompressionCostFor(h, "text", DefaultParameters()).ratio, 5);
  EXPECT_EQ(CompressionCostFor(h, "no-such-corpus", DefaultParameters()).ratio, 0);
}

CompressionLevel VmDisk(const HostProfile& h) {
  return CompressionLevel::On(2.5, CompressionCostFor(h, "vm-disk", DefaultParameters()),
                              "vm-disk benchmark");
}

TEST(PredictCompressionTest, LinkBoundThroughputGrowsByTheRatioUpToTheCompressor) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  HostProfile h = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  Prediction off = Predict(h, ProtectionLevel::None(), large);
  Prediction on = Predict(h, ProtectionLevel::None(), VmDisk(h), large);
  EXPECT_EQ(off.limit, Prediction::Limit::kLink);
  EXPECT_EQ(on.limit, Prediction::Limit::kLink);
  // 2.5:1 plus a 16-byte header per 1 MiB message.
  EXPECT_NEAR(on.throughput_bytes_per_second / off.throughput_bytes_per_second, 2.5, 0.01);
  // The server compresses every byte it sends: 1 / 400 MB/s more CPU per byte.
  EXPECT_NEAR(on.server_cpu_seconds_per_byte - off.server_cpu_seconds_per_byte, 1 / 400e6, 1e-12);
  EXPECT_NEAR(on.client_cpu_seconds_per_byte - off.client_cpu_seconds_per_byte, 1 / 1200e6, 1e-12);
  EXPECT_GT(on.cpu_fraction, 2.5 * off.cpu_fraction);

  // At 1 Gbit, text (5:1 at 150 MB/s) is bound by the compressor (one core per channel)
  // before the wire.
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  h = ProfileFromPosture(posture);
  CompressionLevel text =
      CompressionLevel::On(5, CompressionCostFor(h, "text", DefaultParameters()), "text");
  Prediction gbit = Predict(h, ProtectionLevel::None(), text, large);
  EXPECT_EQ(gbit.limit, Prediction::Limit::kCpu);
  EXPECT_NEAR(gbit.throughput_bytes_per_second, 1 / gbit.server_cpu_seconds_per_byte, 1);
}

TEST(PredictCompressionTest, LatencyBoundWindowCarriesCompressedBytes) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
  (*posture.mutable_host()->mutable_labels())["rtt_ms"] = "30";
  HostProfile h = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  Prediction off = Predict(h, ProtectionLevel::None(), large);
  Prediction on = Predict(h, ProtectionLevel::None(), VmDisk(h), large);
  EXPECT_EQ(on.limit, Prediction::Limit::kLatency);
  EXPECT_NEAR(on.throughput_bytes_per_second / off.throughput_bytes_per_second, 2.5, 0.01);
}

TEST(PredictCompressionTest, IncompressibleDataOnlyCostsCpu) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  HostProfile h = ProfileFromPosture(posture);
  CompressionLevel random = CompressionLevel::On(
      1.0, CompressionCostFor(h, "compressed", DefaultParameters()), "compressed benchmark");
  for (const Workload& w : {Workload::LargeSequential(), Workload::SmallFiles()}) {
    SCOPED_TRACE(w.Name());
    Prediction off = Predict(h, ProtectionLevel::None(), w);
    Prediction on = Predict(h, ProtectionLevel::None(), random, w);
    EXPECT_LE(on.throughput_bytes_per_second, off.throughput_bytes_per_second);
    EXPECT_NEAR(on.server_cpu_seconds_per_byte - off.server_cpu_seconds_per_byte, 1 / 250e6, 1e-12);
    // Sent as it is: the client decompresses nothing.
    EXPECT_DOUBLE_EQ(on.client_cpu_seconds_per_byte, off.client_cpu_seconds_per_byte);
  }
}

TEST(PredictCompressionTest, EncryptionRunsOverTheCompressedBytes) {
  HostProfile h = FastLinkHost();
  h.compression = FitCompressionCosts(CompressingPosture().compression_benchmarks());
  const ProtectionLevel ccm = ProtectionLevel::Encryption(v1::AES_128_CCM);
  Workload large = Workload::LargeSequential();
  CompressionLevel on = VmDisk(h);
  double crypto_plain = Predict(h, ccm, large).server_cpu_seconds_per_byte -
                        Predict(h, ProtectionLevel::None(), large).server_cpu_seconds_per_byte;
  double crypto_compressed =
      Predict(h, ccm, on, large).server_cpu_seconds_per_byte -
      Predict(h, ProtectionLevel::None(), on, large).server_cpu_seconds_per_byte;
  // The cipher's per-byte part sees 1/2.5 of the bytes (the per-message part stays).
  EXPECT_NEAR(crypto_compressed / crypto_plain, 1 / 2.5, 0.02);
}

TEST(PredictCompressionTest, WritesAreCompressedByTheClient) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  HostProfile h = ProfileFromPosture(posture);
  Workload write = Workload::LargeSequential();
  write.direction = Workload::Direction::kWrite;
  Prediction off = Predict(h, ProtectionLevel::None(), write);
  Prediction on = Predict(h, ProtectionLevel::None(), VmDisk(h), write);
  EXPECT_NEAR(on.server_cpu_seconds_per_byte - off.server_cpu_seconds_per_byte, 1 / 1200e6, 1e-12);
  EXPECT_NEAR(on.client_cpu_seconds_per_byte - off.client_cpu_seconds_per_byte, 1 / 400e6, 1e-12);
}

TEST(PredictCompressionTest, MeasuredBaselineCpuScalesWithThroughput) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  HostProfile h = ProfileFromPosture(posture);
  Workload large = Workload::LargeSequential();
  Prediction off = Predict(h, ProtectionLevel::None(), large);
  h.baseline_cpu_fraction = 0.10;
  h.baseline_throughput_bytes_per_second = off.throughput_bytes_per_second;
  EXPECT_DOUBLE_EQ(Predict(h, ProtectionLevel::None(), large).cpu_fraction, 0.10);
  Prediction on = Predict(h, ProtectionLevel::None(), VmDisk(h), large);
  double extra = on.server_cpu_seconds_per_byte - off.server_cpu_seconds_per_byte;
  EXPECT_NEAR(on.cpu_fraction,
              0.10 * on.throughput_bytes_per_second / off.throughput_bytes_per_second +
                  on.throughput_bytes_per_second * extra / 8,
              1e-12);
}

TEST(EstimateChangeCostTest, CompressionSummaryNamesAlgorithmRatioAndSource) {
  v1::Posture posture = CompressingPosture();
  (*posture.mutable_host()->mutable_labels())["link_speed"] = "100Mbit";
  (*posture.mutable_host()->mutable_labels())["wan"] = "true";
  HostProfile h = ProfileFromPosture(posture);
  ChangeCost cost = EstimateChangeCost(h, ProtectionLevel::None(), CompressionLevel::None(),
                                       ProtectionLevel::None(), VmDisk(h));
  EXPECT_GT(cost.workloads[0].throughput_change_percent, 100);
  EXPECT_GT(cost.workloads[0].cpu_change_points, 0);
  EXPECT_THAT(cost.summary,
              ::testing::MatchesRegex(
                  "enabling compression XPRESS Huffman \\(ratio 2.5, vm-disk benchmark\\) on "
                  "fs01: ~\\+[0-9]+% throughput on large files, ~\\+[0-9.]+% CPU at 100 Mbit, "
                  "RTT 30 ms; small files ~[-+0-9.]+%"));

  ChangeCost both = EstimateChangeCost(h, ProtectionLevel::None(), CompressionLevel::None(),
                                       ProtectionLevel::Encryption(v1::AES_128_GCM), VmDisk(h));
  EXPECT_THAT(both.summary, HasSubstr("enabling encryption AES-128-GCM and enabling compression"));
}

}  // namespace
}  // namespace smbfleet::policy::cost
