// The local push router: one stream per host, the newest wins, and sends reach only open
// streams.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "collector/metrics/prometheus_text.h"
#include "collector/push/stream_registry.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

class FakeStream : public AgentStream {
 public:
  void Send(const smbfleet::v1::WatchResponse& message) override { sent.push_back(message); }
  void Close(const std::string& why) override { closed_because = why; }
  void CloseRetryLater(const std::string& why) override {
    closed_because = why;
    retry_later = true;
  }

  std::vector<smbfleet::v1::WatchResponse> sent;
  std::string closed_because;
  bool retry_later = false;
};

smbfleet::v1::WatchResponse Nudge(const std::string& reason) {
  smbfleet::v1::WatchResponse m;
  m.mutable_report_now()->set_reason(reason);
  return m;
}

class PushTest : public ::testing::Test {
 protected:
  // No keepalive during a test.
  StreamRegistry registry_{std::chrono::hours(1)};
};

TEST_F(PushTest, RegisteredStreamReceivesWhatIsSentToItsHost) {
  FakeStream fs01;
  registry_.Register("fs01", &fs01);
  EXPECT_TRUE(registry_.Connected("fs01"));
  EXPECT_FALSE(registry_.Connected("fs02"));
  PushRouter& router = registry_;
  ASSERT_TRUE(router.Send("fs01", Nudge("now")));
  ASSERT_EQ(fs01.sent.size(), 1u);
  EXPECT_EQ(fs01.sent[0].report_now().reason(), "now");
}

// At shutdown every stream ends "retry later" (UNAVAILABLE on the wire), and so does one that
// opens while the server is still stopping.
TEST_F(PushTest, CloseAllEndsEveryStreamRetryLaterAndRefusesNewOnes) {
  FakeStream fs01, fs02, late;
  registry_.Register("fs01", &fs01);
  registry_.Register("fs02", &fs02);
  registry_.CloseAll();
  EXPECT_TRUE(fs01.retry_later);
  EXPECT_TRUE(fs02.retry_later);
  EXPECT_EQ(fs01.closed_because, "collector shutting down");
  registry_.Register("fs03", &late);
  EXPECT_TRUE(late.retry_later);
  EXPECT_FALSE(registry_.Connected("fs03"));
  registry_.Unregister("fs01", &fs01);
  registry_.Unregister("fs02", &fs02);
}

TEST_F(PushTest, SendToUnknownHostIsNotDelivered) {
  FakeStream fs01;
  registry_.Register("fs01", &fs01);
  EXPECT_FALSE(registry_.Send("fs02", Nudge("now")));
  EXPECT_TRUE(fs01.sent.empty());
}

TEST_F(PushTest, NewerStreamReplacesAndClosesTheOlder) {
  FakeStream older, newer;
  registry_.Register("fs01", &older);
  registry_.Register("fs01", &newer);
  EXPECT_NE(older.closed_because.find("replaced"), std::string::npos);
  EXPECT_TRUE(newer.closed_because.empty());
  EXPECT_EQ(registry_.size(), 1u);
  ASSERT_TRUE(registry_.Send("fs01", Nudge("now")));
  EXPECT_TRUE(older.sent.empty());
  EXPECT_EQ(newer.sent.size(), 1u);
}

TEST_F(PushTest, UnregisterRemovesOnlyItsOwnStream) {
  FakeStream older, newer;
  registry_.Register("fs01", &older);
  registry_.Register("fs01", &newer);
  registry_.Unregister("fs01", &older);  // the replaced stream ends late
  EXPECT_TRUE(registry_.Connected("fs01"));
  registry_.Unregister("fs01", &newer);
  EXPECT_FALSE(registry_.Connected("fs01"));
  EXPECT_FALSE(registry_.Send("fs01", Nudge("now")));
}

TEST(PushMetricsTest, ConnectedGaugeCountsOpenStreamsOnce) {
  Metrics metrics;
  StreamRegistry registry(std::chrono::hours(1), &metrics);
  auto connected = [&] { return SampleIn(metrics.Text(), "smbfleet_agents_connected"); };
  FakeStream a, older, newer;
  registry.Register("fs01", &a);
  EXPECT_EQ(connected(), 1);
  registry.Register("fs02", &older);
  EXPECT_EQ(connected(), 2);
  registry.Register("fs02", &newer);  // replaces: still two hosts
  EXPECT_EQ(connected(), 2);
  registry.Unregister("fs02", &older);  // the replaced one ending changes nothing
  EXPECT_EQ(connected(), 2);
  registry.Unregister("fs01", &a);
  EXPECT_EQ(connected(), 1);
  // Sends and keepalives are not connections.
  registry.Send("fs02", Nudge("now"));
  EXPECT_EQ(connected(), 1);
  registry.Unregister("fs02", &newer);
  EXPECT_EQ(connected(), 0);
}

TEST_F(PushTest, CloseAllClosesEveryStream) {
  FakeStream a, b;
  registry_.Register("fs01", &a);
  registry_.Register("fs02", &b);
  registry_.CloseAll();
  EXPECT_FALSE(a.closed_because.empty());
  EXPECT_FALSE(b.closed_because.empty());
}

TEST_F(PushTest, CloseRevokedAsksWithTheHostAndClosesOnlyWhatItSays) {
  FakeStream a, b;
  registry_.Register("fs01", &a, {"1a", std::string(64, 'a')});
  registry_.Register("fs02", &b, {"2b", std::string(64, 'b')});
  std::vector<std::string> asked;
  const size_t closed = registry_.CloseRevoked(
      [&](const std::string& host, const std::string& serial, const std::string&) {
        asked.push_back(host + "/" + serial);
        return host == "fs01";  // a host revocation: whatever the serial
      });
  EXPECT_EQ(closed, 1u);
  EXPECT_NE(a.closed_because.find("fs01"), std::string::npos) << a.closed_because;
  EXPECT_TRUE(b.closed_because.empty());
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<std::string>{"fs01/1a", "fs02/2b"}));
}

TEST(PushKeepaliveTest, StreamsGetKeepalives) {
  FakeStream fs01;
  StreamRegistry registry(std::chrono::milliseconds(5));
  // Unregistering takes the registry's lock: after it, the stream is ours alone to read.
  for (int i = 0; i < 500 && fs01.sent.empty(); ++i) {
    registry.Register("fs01", &fs01);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    registry.Unregister("fs01", &fs01);
  }
  ASSERT_FALSE(fs01.sent.empty());
  EXPECT_TRUE(fs01.sent[0].has_keepalive());
}

}  // namespace
}  // namespace smbfleet::collector
