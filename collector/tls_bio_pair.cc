#include "collector/tls_bio_pair.h"

#include <openssl/bio.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>

namespace smbfleet::collector {
namespace {

// One direction: what one end wrote and the other has not read yet, in data[begin, begin+len).
struct Direction {
  size_t capacity = kBioPairDefaultBytes;
  std::unique_ptr<unsigned char[]> data;  // null while empty
  size_t begin = 0;
  size_t len = 0;
  bool closed = false;  // the writer shut its side (BIO_shutdown_wr)
};

// Both directions; ends[i] writes into to_peer[i] and reads from to_peer[1 - i]. Freed with the
// last of its ends. As OpenSSL's pair, once either end is freed the other reads and writes 0.
struct Pair {
  Direction to_peer[2];
  int ends_alive = 2;
};

struct End {
  Pair* pair;
  int side;
  Direction& Out() const { return pair->to_peer[side]; }
  Direction& In() const { return pair->to_peer[1 - side]; }
  bool Joined() const { return pair->ends_alive == 2; }
};

End* EndOf(BIO* bio) { return static_cast<End*>(BIO_get_data(bio)); }

int Write(BIO* bio, const char* buf, int size) {
  BIO_clear_retry_flags(bio);
  End* end = EndOf(bio);
  if (end == nullptr || !end->Joined() || buf == nullptr || size <= 0) return 0;
  Direction& out = end->Out();
  if (out.closed) return -1;
  if (out.len == out.capacity) {
    BIO_set_retry_write(bio);
    return -1;
  }
  const size_t n = std::min(static_cast<size_t>(size), out.capacity - out.len);
  if (out.data == nullptr) {
    out.data.reset(new unsigned char[out.capacity]);
    out.begin = 0;
  } else if (out.begin + out.len + n > out.capacity) {
    std::memmove(out.data.get(), out.data.get() + out.begin, out.len);
    out.begin = 0;
  }
  std::memcpy(out.data.get() + out.begin + out.len, buf, n);
  out.len += n;
  return static_cast<int>(n);
}

int Read(BIO* bio, char* buf, int size) {
  BIO_clear_retry_flags(bio);
  End* end = EndOf(bio);
  if (end == nullptr || !end->Joined() || buf == nullptr || size <= 0) return 0;
  Direction& in = end->In();
  if (in.len == 0) {
    if (in.closed) return 0;  // the writer closed and nothing is left
    BIO_set_retry_read(bio);
    return -1;
  }
  const size_t n = std::min(static_cast<size_t>(size), in.len);
  std::memcpy(buf, in.data.get() + in.begin, n);
  in.begin += n;
  in.len -= n;
  if (in.len == 0) {
    in.data.reset();  // the point of this pair: an idle direction holds no buffer
    in.begin = 0;
  }
  return static_cast<int>(n);
}

long Ctrl(BIO* bio, int cmd, long num, void* /*ptr*/) {
  End* end = EndOf(bio);
  if (end == nullptr) return 0;
  const bool joined = end->Joined();
  switch (cmd) {
    case BIO_CTRL_PENDING:
      return joined ? static_cast<long>(end->In().len) : 0;
    case BIO_CTRL_WPENDING:
      return joined ? static_cast<long>(end->Out().len) : 0;
    case BIO_CTRL_EOF:
      return joined ? (end->In().closed && end->In().len == 0 ? 1 : 0) : 1;
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
      return 1;
    case BIO_CTRL_GET_CLOSE:
      return BIO_get_shutdown(bio);
    case BIO_CTRL_SET_CLOSE:
      BIO_set_shutdown(bio, static_cast<int>(num));
      return 1;
    case BIO_C_SHUTDOWN_WR:
      end->Out().closed = true;
      return 1;
    case BIO_C_GET_WRITE_BUF_SIZE:
      return static_cast<long>(end->Out().capacity);
    case BIO_C_GET_WRITE_GUARANTEE:
      return joined && !end->Out().closed ? static_cast<long>(end->Out().capacity - end->Out().len)
                                          : 0;
    default:
      return 0;
  }
}

int Create(BIO* bio) {
  BIO_set_data(bio, nullptr);
  BIO_set_init(bio, 0);
  BIO_set_shutdown(bio, 1);
  return 1;
}

int Destroy(BIO* bio) {
  End* end = EndOf(bio);
  if (end == nullptr) return 1;
  Pair* pair = end->pair;
  delete end;
  BIO_set_data(bio, nullptr);
  if (--pair->ends_alive == 0) {
    delete pair;
  } else {
    // The other end can no longer read or write: drop what is buffered, as OpenSSL's pair does.
    for (Direction& d : pair->to_peer) {
      d.data.reset();
      d.len = 0;
      d.begin = 0;
    }
  }
  return 1;
}

struct PairMethod {
  int type = 0;
  BIO_METHOD* method = nullptr;
};

const PairMethod& Method() {
  static const PairMethod pair_method = [] {
    PairMethod p;
    p.type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK;
    p.method = BIO_meth_new(p.type, "releasing BIO pair");
    if (p.method != nullptr) {
      BIO_meth_set_write(p.method, Write);
      BIO_meth_set_read(p.method, Read);
      BIO_meth_set_ctrl(p.method, Ctrl);
      BIO_meth_set_create(p.method, Create);
      BIO_meth_set_destroy(p.method, Destroy);
    }
    return p;
  }();
  return pair_method;
}

}  // namespace

int NewReleasingBioPair(BIO** bio1, size_t writebuf1, BIO** bio2, size_t writebuf2) {
  *bio1 = nullptr;
  *bio2 = nullptr;
  const BIO_METHOD* method = Method().method;
  if (method == nullptr || writebuf1 > INT_MAX || writebuf2 > INT_MAX) return 0;
  BIO* a = BIO_new(method);
  BIO* b = BIO_new(method);
  if (a == nullptr || b == nullptr) {
    BIO_free(a);
    BIO_free(b);
    return 0;
  }
  auto* pair = new Pair;
  pair->to_peer[0].capacity = writebuf1 == 0 ? kBioPairDefaultBytes : writebuf1;
  pair->to_peer[1].capacity = writebuf2 == 0 ? kBioPairDefaultBytes : writebuf2;
  BIO_set_data(a, new End{pair, 0});
  BIO_set_data(b, new End{pair, 1});
  BIO_set_init(a, 1);
  BIO_set_init(b, 1);
  *bio1 = a;
  *bio2 = b;
  return 1;
}

size_t BioPairAllocatedBytes(BIO* bio) {
  if (bio == nullptr || BIO_method_type(bio) != Method().type) return 0;
  End* end = EndOf(bio);
  if (end == nullptr) return 0;
  size_t total = 0;
  for (const Direction& d : end->pair->to_peer) {
    if (d.data != nullptr) total += d.capacity;
  }
  return total;
}

}  // namespace smbfleet::collector
