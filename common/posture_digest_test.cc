#include "common/posture_digest.h"

#include "gtest/gtest.h"

namespace smbfleet {
namespace {

smbfleet::v1::Posture Sample() {
  smbfleet::v1::Posture p;
  p.mutable_host()->set_hostname("fs01");
  (*p.mutable_host()->mutable_labels())["site"] = "ams";
  (*p.mutable_host()->mutable_labels())["tier"] = "gold";
  p.mutable_collected_at()->set_seconds(100);
  p.mutable_server()->set_require_signing(false);
  auto* s = p.add_sessions();
  s->set_session_id("1");
  s->set_dialect(smbfleet::v1::DIALECT_SMB_3_1_1);
  s->set_seconds_idle(5);
  return p;
}

TEST(PostureDigestTest, IgnoresCollectionTimeAndSessionAges) {
  auto a = Sample();
  auto b = Sample();
  b.mutable_collected_at()->set_seconds(999);
  b.mutable_sessions(0)->set_seconds_idle(77);
  b.mutable_sessions(0)->set_seconds_exists(12);
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
  EXPECT_EQ(PostureDigest(a).size(), 64u);
}

TEST(PostureDigestTest, IgnoresMovingRoundTripFiguresButNotTheLowest) {
  auto a = Sample();
  a.mutable_sessions(0)->set_rtt_us(900);
  a.mutable_sessions(0)->set_min_rtt_us(40);
  auto b = a;
  b.mutable_sessions(0)->set_rtt_us(8900);
  b.mutable_sessions(0)->set_rttvar_us(4400);
  b.mutable_sessions(0)->set_retransmits(3);
  b.mutable_sessions(0)->set_delivery_rate_bytes_per_sec(125000000);
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
  b.mutable_sessions(0)->set_min_rtt_us(23400);
  EXPECT_NE(PostureDigest(a), PostureDigest(b));
}

TEST(PostureDigestTest, TheLowestRoundTripCountsInWholeMilliseconds) {
  auto a = Sample();
  a.mutable_sessions(0)->set_min_rtt_us(22);
  auto b = a;
  b.mutable_sessions(0)->set_min_rtt_us(16);  // a lower sample on loopback: the same posture
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
  a.mutable_sessions(0)->set_min_rtt_us(10'900);
  b.mutable_sessions(0)->set_min_rtt_us(10'000);
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
  b.mutable_sessions(0)->set_min_rtt_us(9'990);  // under the next whole millisecond
  EXPECT_NE(PostureDigest(a), PostureDigest(b));
  // Known as under a millisecond is not unknown.
  auto unknown = Sample();
  auto fast = Sample();
  fast.mutable_sessions(0)->set_min_rtt_us(400);
  EXPECT_NE(PostureDigest(unknown), PostureDigest(fast));
}

TEST(PostureDigestTest, IgnoresUnreadableLoadCountersButNotOtherProbeErrors) {
  auto a = Sample();
  auto b = a;
  auto* counters = b.add_probe_errors();
  counters->set_probe(std::string(kLoadCountersProbe));
  counters->set_code("UNREADABLE");
  counters->set_message("counters left absent from the samples: /proc/4242/stat: parse error");
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
  auto* smbstatus = b.add_probe_errors();
  smbstatus->set_probe("smbstatus");
  smbstatus->set_code("TIMEOUT");
  EXPECT_NE(PostureDigest(a), PostureDigest(b));
}

TEST(PostureDigestTest, ChangesWithConfigurationAndSessions) {
  auto a = Sample();
  auto b = Sample();
  b.mutable_server()->set_require_signing(true);
  EXPECT_NE(PostureDigest(a), PostureDigest(b));
  auto c = Sample();
  c.mutable_sessions(0)->set_dialect(smbfleet::v1::DIALECT_SMB_2_1);
  EXPECT_NE(PostureDigest(a), PostureDigest(c));
  // Unknown (unset) is not the same as false.
  auto d = Sample();
  d.mutable_server()->clear_require_signing();
  EXPECT_NE(PostureDigest(a), PostureDigest(d));
}

TEST(PostureDigestTest, MapOrderDoesNotMatter) {
  smbfleet::v1::Posture a, b;
  (*a.mutable_host()->mutable_labels())["x"] = "1";
  (*a.mutable_host()->mutable_labels())["y"] = "2";
  (*b.mutable_host()->mutable_labels())["y"] = "2";
  (*b.mutable_host()->mutable_labels())["x"] = "1";
  EXPECT_EQ(PostureDigest(a), PostureDigest(b));
}

TEST(PostureDigestTest, ProbeErrorsAreAChange) {
  auto a = Sample();
  auto b = Sample();
  auto* e = b.add_probe_errors();
  e->set_probe("spool");
  e->set_code("DROPPED");
  EXPECT_NE(PostureDigest(a), PostureDigest(b));
}

TEST(PostureDigestTest, IsPostureDigestChecksTheForm) {
  EXPECT_TRUE(IsPostureDigest(PostureDigest(Sample())));
  EXPECT_FALSE(IsPostureDigest(""));
  EXPECT_FALSE(IsPostureDigest(std::string(63, 'a')));
  EXPECT_FALSE(IsPostureDigest(std::string(64, 'A')));
  EXPECT_FALSE(IsPostureDigest(std::string(64, 'g')));
}

}  // namespace
}  // namespace smbfleet
