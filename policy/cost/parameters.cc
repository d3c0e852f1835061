// The model's parameters and where each comes from. docs/cost-model.md has the runs.
#include "policy/cost/cost_model.h"

namespace smbfleet::policy::cost {
namespace {
namespace v1 = ::smbfleet::v1;
}  // namespace

const ModelParameters& DefaultParameters() {
  static const ModelParameters* const kParameters = [] {
    auto* p = new ModelParameters;
    // CALIBRATION PENDING (values from a first loopback trial, replaced by the calibration run).
    p->server_base_cpu_seconds_per_byte = 3.9e-9;
    p->client_base_cpu_seconds_per_byte = 2.0e-9;
    p->server_cpu_seconds_per_op = 50e-6;
    p->client_cpu_seconds_per_op = 50e-6;
    // Published test: 1 Gbit link, 108 MB/s at 0.25 ms RTT and 31 MB/s at 30 ms.
    // Link efficiency = 108e6 / 125e6 ~ 0.87 is the payload share at 0.25 ms; window =
    // 31 MB/s x 30 ms = 0.93 MB in flight.
    p->link_efficiency = 108e6 / 125e6;
    p->window_bytes = 31e6 * 0.030;
    // Reference host (2 vCPU AMD EPYC VM, AES-NI, PCLMULQDQ, VAES, VPCLMULQDQ, SHA-NI;
    // OpenSSL 3.0): one-thread agent benchmark (crypto_bench_compare), fitted as
    // seconds = per_call + per_byte x size through 4 KiB and 1 MiB.
    const struct {
      v1::CryptoAlgorithm algorithm;
      double per_call;
      double per_byte;
    } kReference[] = {
        {v1::AES_128_CCM, 2.51e-07, 8.439e-10},   // 1185 MB/s at 1 MiB
        {v1::AES_128_GCM, 2.5e-07, 2.233e-10},    // 4474 MB/s
        {v1::AES_256_CCM, 2.67e-07, 1.193e-09},   // 838 MB/s
        {v1::AES_256_GCM, 2.33e-07, 2.394e-10},   // 4173 MB/s
        {v1::AES_128_CMAC, 1.7e-07, 1.017e-09},   // 983 MB/s
        {v1::AES_128_GMAC, 2.58e-07, 1.378e-10},  // 7244 MB/s
        {v1::HMAC_SHA256, 1.96e-07, 6.727e-10},   // 1486 MB/s
    };
    for (const auto& r : kReference) {
      CryptoCost cost;
      cost.seconds_per_call = r.per_call;
      cost.seconds_per_byte = r.per_byte;
      cost.measured = false;
      p->default_crypto[r.algorithm] = cost;
    }
    return p;
  }();
  return *kParameters;
}

}  // namespace smbfleet::policy::cost
