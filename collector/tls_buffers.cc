// The TLS buffers of an executable that holds many connections: what an idle connection keeps
// (docs/scaling.md). Linked into the collector and into the loadgen, whose simulated agents are
// each a client connection of their own.
//
// gRPC 1.51 makes its own SSL_CTX and BIO pair for each connection, server or client, and offers
// no option for either, so the executable defines the two OpenSSL functions it calls. The
// definitions are linked into the executables only, not the libraries the tests use;
// collector/CMakeLists.txt exports them so that gRPC's libraries find them before OpenSSL's.
#include <dlfcn.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <cstddef>

#include "collector/tls_bio_pair.h"

// SSL_MODE_RELEASE_BUFFERS: OpenSSL frees a connection's read and write record buffers (about
// 34 KB together) while no record is in transit and allocates them again for the next one.
extern "C" SSL_CTX* SSL_CTX_new(const SSL_METHOD* method) {
  using Fn = SSL_CTX* (*)(const SSL_METHOD*);
  static const Fn openssl = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "SSL_CTX_new"));
  if (openssl == nullptr) return nullptr;
  SSL_CTX* ctx = openssl(method);
  if (ctx != nullptr) SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

// gRPC's TLS keeps a BIO pair between the socket and OpenSSL; OpenSSL's pair holds both of its
// 17 KB buffers for the connection's life. This one behaves the same but holds a buffer only
// while bytes are in it (collector/tls_bio_pair.h).
extern "C" int BIO_new_bio_pair(BIO** bio1, size_t writebuf1, BIO** bio2, size_t writebuf2) {
  return smbfleet::collector::NewReleasingBioPair(bio1, writebuf1, bio2, writebuf2);
}
