// SSL_MODE_RELEASE_BUFFERS for every TLS context of the collector executable.
//
// An idle connection keeps OpenSSL's read and write record buffers (about 34 KB together) unless
// its SSL_CTX has SSL_MODE_RELEASE_BUFFERS, which frees them while no record is in transit and
// allocates them again for the next one. gRPC 1.51 makes its own SSL_CTX for the server's
// credentials and offers no option for the mode, so this executable defines SSL_CTX_new: it
// calls OpenSSL's and sets the mode. Measured with tests/bench/scale.sh (docs/scaling.md). The
// definition is linked into the executable only, not the libraries the tests use.
#include <dlfcn.h>
#include <openssl/ssl.h>

extern "C" SSL_CTX* SSL_CTX_new(const SSL_METHOD* method) {
  using Fn = SSL_CTX* (*)(const SSL_METHOD*);
  static const Fn openssl = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "SSL_CTX_new"));
  if (openssl == nullptr) return nullptr;
  SSL_CTX* ctx = openssl(method);
  if (ctx != nullptr) SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}
