#ifndef SMBFLEET_POLICY_COST_COMPRESSION_ROW_TESTING_H_
#define SMBFLEET_POLICY_COST_COMPRESSION_ROW_TESTING_H_

// For tests: a compression benchmark row as the agent reports it (Posture.compression_benchmarks),
// and a share with a sampled compression ratio.

#include <cstdint>
#include <string>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy::cost {

inline ::smbfleet::v1::CompressionBenchmark CompressionRow(
    ::smbfleet::v1::CompressionAlgorithm algorithm, const std::string& corpus, double ratio,
    double compress_bytes_per_second, double decompress_bytes_per_second,
    uint64_t input_bytes = 1 << 20, uint32_t threads = 1) {
  ::smbfleet::v1::CompressionBenchmark row;
  row.set_algorithm(algorithm);
  row.set_corpus(corpus);
  row.set_input_bytes(input_bytes);
  row.set_ratio(ratio);
  row.set_compress_bytes_per_second(compress_bytes_per_second);
  row.set_decompress_bytes_per_second(decompress_bytes_per_second);
  row.set_threads(threads);
  return row;
}

// A share with CompressData as given and a sampled compression ratio.
inline ::smbfleet::v1::Share* AddSampledShare(::smbfleet::v1::Posture* posture,
                                              const std::string& name, bool compress_data,
                                              double ratio) {
  ::smbfleet::v1::Share* share = posture->add_shares();
  share->set_name(name);
  share->set_compress_data(compress_data);
  share->mutable_compressibility()->set_ratio(ratio);
  return share;
}

}  // namespace smbfleet::policy::cost

#endif  // SMBFLEET_POLICY_COST_COMPRESSION_ROW_TESTING_H_
