#include "tests/bench/cost_model_compression.h"

namespace smbfleet::tests::bench {

namespace v1 = ::smbfleet::v1;
namespace cost = ::smbfleet::policy::cost;

double ModelCompressSeconds(const cost::HostProfile& host, const std::string& corpus,
                            uint64_t bytes) {
  cost::CompressionCost figures = cost::CompressionCostFor(host, corpus, cost::DefaultParameters());
  if (!(figures.ratio > 0)) {
    return 0;
  }
  const cost::Workload large = cost::Workload::LargeSequential();
  const cost::ProtectionLevel none = cost::ProtectionLevel::None();
  double on =
      cost::Predict(host, none, cost::CompressionLevel::On(figures.ratio, figures, corpus), large)
          .server_cpu_seconds_per_byte;
  double off = cost::Predict(host, none, large).server_cpu_seconds_per_byte;
  return (on - off) * static_cast<double>(bytes);
}

CpuTermCheck CompareCpuTerm(const cost::HostProfile& host, const std::string& corpus,
                            uint64_t bytes, double measured_seconds) {
  CpuTermCheck out;
  out.corpus = corpus;
  out.bytes = bytes;
  out.predicted_seconds = ModelCompressSeconds(host, corpus, bytes);
  out.measured_seconds = measured_seconds;
  if (measured_seconds > 0) {
    out.error = out.predicted_seconds / measured_seconds - 1;
  }
  return out;
}

PublishedPrediction PredictPublishedCase(
    const PublishedCase& c,
    const google::protobuf::RepeatedPtrField<v1::CompressionBenchmark>& rows,
    cost::Workload::Direction direction) {
  cost::HostProfile host;
  host.hostname = "ws2022";
  host.platform = v1::PLATFORM_WINDOWS;
  host.logical_cores = c.logical_cores;
  host.link_bits_per_second = c.link_bits_per_second;
  host.compression = cost::FitCompressionCosts(rows);
  host.baseline_cpu_fraction = c.baseline_cpu_fraction;
  host.baseline_throughput_bytes_per_second = c.baseline_bytes_per_second;

  cost::CompressionCost vm = cost::CompressionCostFor(host, "vm-disk", cost::DefaultParameters());
  cost::Workload w = cost::Workload::LargeSequential();
  w.direction = direction;
  const cost::ProtectionLevel none = cost::ProtectionLevel::None();
  cost::Prediction before = cost::Predict(host, none, w);
  cost::Prediction after =
      cost::Predict(host, none, cost::CompressionLevel::On(vm.ratio, vm, "vm-disk benchmark"), w);
  PublishedPrediction out;
  out.throughput_before = before.throughput_bytes_per_second;
  out.throughput_after = after.throughput_bytes_per_second;
  out.cpu_before = before.cpu_fraction;
  out.cpu_after = after.cpu_fraction;
  out.throughput_gain = out.throughput_after / out.throughput_before - 1;
  out.cpu_ratio = out.cpu_after / out.cpu_before;
  out.limit_after = after.limit;
  out.summary =
      cost::EstimateChangeCost(host, none, cost::CompressionLevel::None(), none,
                               cost::CompressionLevel::On(vm.ratio, vm, "vm-disk benchmark"))
          .summary;
  return out;
}

}  // namespace smbfleet::tests::bench
