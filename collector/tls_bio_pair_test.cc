#include "collector/tls_bio_pair.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <string>

#include "collector/enroll/test_ca.h"

namespace smbfleet::collector {
namespace {

std::string Read(BIO* bio, int size) {
  std::string out(static_cast<size_t>(size), '\0');
  const int n = BIO_read(bio, out.data(), size);
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

TEST(ReleasingBioPairTest, BehavesAsOpenSslsPairAndHoldsNoBufferWhileEmpty) {
  BIO* a = nullptr;
  BIO* b = nullptr;
  char buf[4];
  ASSERT_EQ(NewReleasingBioPair(&a, 8, &b, 16), 1);
  EXPECT_EQ(BioPairAllocatedBytes(a), 0u);
  EXPECT_EQ(BIO_ctrl_get_write_guarantee(a), 8u);

  // Reading an empty direction asks to retry.
  EXPECT_EQ(BIO_read(b, buf, sizeof(buf)), -1);
  EXPECT_TRUE(BIO_should_retry(b));
  EXPECT_TRUE(BIO_should_read(b));

  // A write larger than the room left is partial; a write into a full direction asks to retry.
  EXPECT_EQ(BIO_write(a, "0123456789", 10), 8);
  EXPECT_EQ(BioPairAllocatedBytes(a), 8u);
  EXPECT_EQ(BIO_write(a, "89", 2), -1);
  EXPECT_TRUE(BIO_should_retry(a));
  EXPECT_TRUE(BIO_should_write(a));
  EXPECT_EQ(BIO_pending(b), 8);
  EXPECT_EQ(BIO_wpending(a), 8);
  EXPECT_EQ(BIO_pending(a), 0);

  // Reading makes room; the bytes come out in order across the buffer's reuse.
  EXPECT_EQ(Read(b, 5), "01234");
  EXPECT_EQ(BIO_write(a, "89ab", 4), 4);
  EXPECT_EQ(BIO_write(a, "c", 1), 1);
  EXPECT_EQ(Read(b, 100), "56789abc");
  EXPECT_EQ(BioPairAllocatedBytes(a), 0u) << "read empty: the buffer is freed";

  // The other direction, its own size.
  EXPECT_EQ(BIO_write(b, "the other way, twenty", 21), 16);
  EXPECT_EQ(BioPairAllocatedBytes(b), 16u);
  EXPECT_EQ(Read(a, 16), "the other way, t");
  EXPECT_EQ(BioPairAllocatedBytes(b), 0u);

  // Shutting the write side: the reader sees the rest, then the end of the data.
  EXPECT_EQ(BIO_write(a, "xy", 2), 2);
  EXPECT_EQ(BIO_shutdown_wr(a), 1);
  EXPECT_EQ(BIO_write(a, "z", 1), -1);
  EXPECT_EQ(BIO_eof(b), 0);
  EXPECT_EQ(Read(b, 10), "xy");
  EXPECT_EQ(BIO_read(b, buf, sizeof(buf)), 0);
  EXPECT_FALSE(BIO_should_retry(b));
  EXPECT_EQ(BIO_eof(b), 1);

  // Once one end is freed the other reads and writes nothing.
  BIO_free(a);
  EXPECT_EQ(BIO_write(b, "late", 4), 0);
  EXPECT_EQ(BIO_pending(b), 0);
  BIO_free(b);
}

TEST(ReleasingBioPairTest, DefaultSizeIsOpenSsls) {
  BIO* a = nullptr;
  BIO* b = nullptr;
  ASSERT_EQ(NewReleasingBioPair(&a, 0, &b, 0), 1);
  EXPECT_EQ(BIO_ctrl_get_write_guarantee(a), kBioPairDefaultBytes);
  EXPECT_EQ(BIO_ctrl_get_write_guarantee(b), kBioPairDefaultBytes);
  BIO_free(b);
  BIO_free(a);
}

TEST(ReleasingBioPairTest, NotAPairHasNoPairBuffer) {
  BIO* mem = BIO_new(BIO_s_mem());
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(BIO_write(mem, "abc", 3), 3);
  EXPECT_EQ(BioPairAllocatedBytes(mem), 0u);
  BIO_free(mem);
}

// A TLS connection as gRPC's TLS runs it: each SSL talks to one end of a pair (the server's our
// pair, the client's OpenSSL's), and the other ends (the "network") are copied across in chunks
// no larger than what the receiving direction can take.
class TlsOverPairs : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    testing_ca::TestCa ca = testing_ca::MakeCa();
    server_ctx_ = SSL_CTX_new(TLS_server_method());
    client_ctx_ = SSL_CTX_new(TLS_client_method());
    ASSERT_NE(server_ctx_, nullptr);
    ASSERT_NE(client_ctx_, nullptr);
    BIO* cert = BIO_new_mem_buf(ca.cert_pem.data(), static_cast<int>(ca.cert_pem.size()));
    BIO* key = BIO_new_mem_buf(ca.key_pem.data(), static_cast<int>(ca.key_pem.size()));
    X509* x509 = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    ASSERT_EQ(SSL_CTX_use_certificate(server_ctx_, x509), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey(server_ctx_, pkey), 1);
    X509_free(x509);
    EVP_PKEY_free(pkey);
    BIO_free(cert);
    BIO_free(key);
    SSL_CTX_set_mode(server_ctx_, SSL_MODE_RELEASE_BUFFERS);

    server_ = SSL_new(server_ctx_);
    client_ = SSL_new(client_ctx_);
    BIO* server_ssl_io = nullptr;
    BIO* client_ssl_io = nullptr;
    ASSERT_EQ(NewReleasingBioPair(&server_net_, GetParam(), &server_ssl_io, GetParam()), 1);
    ASSERT_EQ(BIO_new_bio_pair(&client_net_, 0, &client_ssl_io, 0), 1);
    SSL_set_bio(server_, server_ssl_io, server_ssl_io);
    SSL_set_bio(client_, client_ssl_io, client_ssl_io);
    SSL_set_accept_state(server_);
    SSL_set_connect_state(client_);
  }

  void TearDown() override {
    SSL_free(server_);
    SSL_free(client_);
    BIO_free(server_net_);
    BIO_free(client_net_);
    SSL_CTX_free(server_ctx_);
    SSL_CTX_free(client_ctx_);
  }

  // Copies what `from` holds into `to`, at most 1,000 bytes at a time; returns the bytes moved.
  static size_t Move(BIO* from, BIO* to) {
    size_t moved = 0;
    char chunk[1000];
    for (;;) {
      const size_t n = std::min({sizeof(chunk), static_cast<size_t>(BIO_pending(from)),
                                 BIO_ctrl_get_write_guarantee(to)});
      if (n == 0) return moved;
      EXPECT_EQ(BIO_read(from, chunk, static_cast<int>(n)), static_cast<int>(n));
      EXPECT_EQ(BIO_write(to, chunk, static_cast<int>(n)), static_cast<int>(n));
      moved += n;
    }
  }

  size_t Pump() { return Move(client_net_, server_net_) + Move(server_net_, client_net_); }

  static bool Retry(SSL* ssl, int result) {
    const int error = SSL_get_error(ssl, result);
    return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE;
  }

  // Sends `data` from one SSL to the other; returns what arrived.
  std::string Send(SSL* from, SSL* to, const std::string& data) {
    std::string got;
    size_t sent = 0;
    char buf[4096];
    for (int round = 0; got.size() < data.size() && round < 1000000; ++round) {
      if (sent < data.size()) {
        const int n = SSL_write(from, data.data() + sent,
                                static_cast<int>(std::min<size_t>(16384, data.size() - sent)));
        if (n > 0) {
          sent += static_cast<size_t>(n);
        } else if (!Retry(from, n)) {
          ADD_FAILURE() << "SSL_write: " << SSL_get_error(from, n);
          break;
        }
      }
      Pump();
      int n = 0;
      while ((n = SSL_read(to, buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
      if (!Retry(to, n)) {
        ADD_FAILURE() << "SSL_read: " << SSL_get_error(to, n);
        break;
      }
    }
    return got;
  }

  SSL_CTX* server_ctx_ = nullptr;
  SSL_CTX* client_ctx_ = nullptr;
  SSL* server_ = nullptr;
  SSL* client_ = nullptr;
  BIO* server_net_ = nullptr;
  BIO* client_net_ = nullptr;
};

TEST_P(TlsOverPairs, HandshakeAndLargeMessagesBothWaysThenNoBufferHeld) {
  bool server_done = false;
  bool client_done = false;
  for (int round = 0; round < 1000 && !(server_done && client_done); ++round) {
    const int c = SSL_do_handshake(client_);
    client_done = c == 1;
    ASSERT_TRUE(client_done || Retry(client_, c)) << "client: " << SSL_get_error(client_, c);
    Pump();
    const int s = SSL_do_handshake(server_);
    server_done = s == 1;
    ASSERT_TRUE(server_done || Retry(server_, s)) << "server: " << SSL_get_error(server_, s);
    Pump();
  }
  ASSERT_TRUE(server_done && client_done);

  // Larger than any record or buffer, patterned so that a lost or repeated chunk shows.
  std::string up(3 * 1024 * 1024 + 7, '\0');
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<char>((i * 131 + i / 4093) & 0xff);
  std::string down(up.rbegin(), up.rend());
  EXPECT_TRUE(Send(client_, server_, up) == up);
  EXPECT_TRUE(Send(server_, client_, down) == down);

  // While a record waits in the pair, its direction holds a buffer; drained, none.
  ASSERT_EQ(SSL_write(client_, "ping", 4), 4);
  Pump();
  EXPECT_GT(BioPairAllocatedBytes(server_net_), 0u);
  char buf[16];
  EXPECT_EQ(SSL_read(server_, buf, sizeof(buf)), 4);
  EXPECT_EQ(BIO_pending(server_net_), 0);
  EXPECT_EQ(BioPairAllocatedBytes(server_net_), 0u);
}

// 0: OpenSSL's default size, what gRPC asks for; 1 KiB: smaller than one TLS record.
INSTANTIATE_TEST_SUITE_P(Sizes, TlsOverPairs, ::testing::Values(size_t{0}, size_t{1024}));

}  // namespace
}  // namespace smbfleet::collector
