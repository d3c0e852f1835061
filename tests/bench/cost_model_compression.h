#ifndef SMBFLEET_TESTS_BENCH_COST_MODEL_COMPRESSION_H_
#define SMBFLEET_TESTS_BENCH_COST_MODEL_COMPRESSION_H_

// The arithmetic of the compression checks of the cost model: the model's CPU term for
// compressing a number of bytes of a corpus, compared with what compressing them took here
// (cost_model_compression_check), and the published Windows Server 2022 case
// (cost_model_compression_test).

#include <cstdint>
#include <string>

#include "policy/cost/cost_model.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::tests::bench {

// Server CPU seconds the model adds for sending `bytes` of `corpus` compressed (large reads):
// Predict's server CPU per byte with compression minus without, times `bytes`. 0 when the host
// has no figures for the corpus.
double ModelCompressSeconds(const policy::cost::HostProfile& host, const std::string& corpus,
                            uint64_t bytes);

struct CpuTermCheck {
  std::string corpus;
  uint64_t bytes = 0;
  double predicted_seconds = 0;
  double measured_seconds = 0;
  double error = 0;  // predicted / measured - 1
};

CpuTermCheck CompareCpuTerm(const policy::cost::HostProfile& host, const std::string& corpus,
                            uint64_t bytes, double measured_seconds);

// The published case: Windows Server 2022 replicating VM backups over 1 Gbit, about 110 MB/s
// at about 15% server CPU without compression.
struct PublishedCase {
  double link_bits_per_second = 1e9;
  double baseline_bytes_per_second = 110e6;
  double baseline_cpu_fraction = 0.15;
  uint32_t logical_cores = 8;  // not published: a typical file server VM, see the test
};

struct PublishedPrediction {
  double throughput_before = 0;  // bytes per second
  double throughput_after = 0;
  double cpu_before = 0;  // fraction of all cores
  double cpu_after = 0;
  double throughput_gain = 0;  // after / before - 1
  double cpu_ratio = 0;        // after / before
  policy::cost::Prediction::Limit limit_after = policy::cost::Prediction::Limit::kLink;
  std::string summary;
};

// Feeds the model the case with `rows` as the host's benchmark and the vm-disk corpus as the
// data; `direction` read = the server sends (and compresses) the backups.
PublishedPrediction PredictPublishedCase(
    const PublishedCase& c,
    const google::protobuf::RepeatedPtrField<smbfleet::v1::CompressionBenchmark>& rows,
    policy::cost::Workload::Direction direction = policy::cost::Workload::Direction::kRead);

}  // namespace smbfleet::tests::bench

#endif  // SMBFLEET_TESTS_BENCH_COST_MODEL_COMPRESSION_H_
