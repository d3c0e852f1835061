#ifndef SMBFLEET_COLLECTOR_TLS_BIO_PAIR_H_
#define SMBFLEET_COLLECTOR_TLS_BIO_PAIR_H_

// A BIO pair (OpenSSL's BIO_new_bio_pair) that holds no buffer while it is empty.
//
// gRPC's TLS puts a BIO pair between the socket and OpenSSL, and OpenSSL's pair allocates both
// write buffers (17 KB each by default) when it is made and keeps them for the connection's
// life: 34 KB for every idle connection. This pair behaves the same to its users (the same
// capacity, partial writes when the buffer fills, retry on full and empty, pending counts,
// shutdown of the write side) but allocates a direction's buffer on its first write and frees
// it again once it has been read empty. docs/scaling.md has the measurements.

#include <openssl/bio.h>

#include <cstddef>

namespace smbfleet::collector {

// The default write buffer size of OpenSSL's pair, used when a size is 0.
inline constexpr size_t kBioPairDefaultBytes = 17 * 1024;

// As BIO_new_bio_pair: two joined BIOs; what is written to one is read from the other, each
// direction holding at most its writer's size (0: kBioPairDefaultBytes). Returns 1 and sets both,
// or 0 and sets both to nullptr. Each end is freed with BIO_free.
int NewReleasingBioPair(BIO** bio1, size_t writebuf1, BIO** bio2, size_t writebuf2);

// The bytes of buffer allocated for both directions of the pair that `bio` is an end of.
size_t BioPairAllocatedBytes(BIO* bio);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_TLS_BIO_PAIR_H_
