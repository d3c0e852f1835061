// The model's parameters and where each comes from. docs/cost-model.md has the runs.
#include "policy/cost/cost_model.h"

namespace smbfleet::policy::cost {
namespace {
namespace v1 = ::smbfleet::v1;
}  // namespace

const ModelParameters& DefaultParameters() {
  static const ModelParameters* const kParameters = [] {
    auto* p = new ModelParameters;
    // CPU of the SMB path without crypto, and the Samba crypto factors: calibration run
    // "E" of tests/bench/cost_model_validate.sh (2026-12-03, Samba 4.17.12 smbd + smbclient on
    // 127.0.0.1, each pinned to a core of its own on an otherwise idle reference host below;
    // 5 runs per posture, 1 GiB file, 1500 x 16 KiB files), median of the runs of each
    // posture. docs/cost-model.md has the run, and run F that validates it.
    p->server_base_cpu_seconds_per_byte = 0.302e-9;  // smbd, READ path
    p->client_base_cpu_seconds_per_byte = 0.180e-9;  // smbclient get to /dev/null
    p->server_cpu_seconds_per_op = 83.4e-6;          // per request: CREATE/QUERY_INFO/READ/CLOSE
    p->client_cpu_seconds_per_op = 45.8e-6;
    // Extra CPU per 1 MiB READ over "none" divided by the EVP cost of the same two messages.
    // Samba's encryption costs about 3x the OpenSSL cipher for CCM and 1-2.5x for GCM (GnuTLS
    // and the copies of the encryption path); HMAC and CMAC signing cost 1-1.5x the bare
    // primitive, GMAC about 2x (its per-byte cost is so small that the per-message work shows).
    const struct {
      v1::CryptoAlgorithm algorithm;
      double server;
      double client;
    } kSamba[] = {
        {v1::HMAC_SHA256, 1.14, 1.04},  {v1::AES_128_CMAC, 1.53, 1.46},
        {v1::AES_128_GMAC, 1.99, 1.75}, {v1::AES_128_CCM, 3.25, 3.62},
        {v1::AES_128_GCM, 2.53, 1.49},  {v1::AES_256_CCM, 2.64, 2.86},
        {v1::AES_256_GCM, 1.81, 1.14},
    };
    for (const auto& f : kSamba) {
      p->samba_crypto_factor[f.algorithm] = f.server;
      p->samba_client_crypto_factor[f.algorithm] = f.client;
    }
    // Windows (CNG) is not calibrated: crypto_factor stays empty (1.0, the bare primitive).
    // Published test: 1 Gbit link, 108 MB/s at 0.25 ms RTT and 31 MB/s at 30 ms.
    // Link efficiency = 108e6 / 125e6 ~ 0.87 is the payload share at 0.25 ms; window =
    // 31 MB/s x 30 ms = 0.93 MB in flight.
    p->link_efficiency = 108e6 / 125e6;
    p->window_bytes = 31e6 * 0.030;
    // smbclient 4.17 `get` (Samba source3/client/client.c do_get -> cli_pull_send in
    // source3/libsmb/clireadwrite.c) keeps 16 MiB of reads outstanding (its default window,
    // io_bufsize 0) in reads of the server's SMB2 MaxReadSize: smbd's `smb2 max read`, 8 MiB
    // by default, so 2 reads; credits do not bind (smbd grants up to `smb2 max credits`, 8192,
    // = 512 MiB). 16 MiB is more than smbd's TCP socket may hold: Linux caps a socket's send
    // buffer (bytes in flight plus bytes not yet sent) at net.ipv4.tcp_wmem's max, 4 MiB by
    // default, and smbd sets no SO_SNDBUF. smbd writes into the non-blocking socket and is woken
    // to write more only when the queue has fallen to 2/3 of the buffer (the kernel's
    // sk_stream_min_wspace: free space >= half of what is queued), so while a read is served the
    // queue lies between 2/3 and all of 4 MiB, and part of it waits for BBR's pacing
    // (0.8-1.1 MB seen at 30 ms). The window is the queue's floor, 2/3 x 4 MiB = 2.8 MB;
    // measured in flight through smbfleet-delay-link: 2.65 MB at 60 ms over 256 MiB copies
    // (docs/netpath.md).
    p->smbclient_window_bytes = 4194304.0 * 2 / 3;
    // smbclient's reads pay both ends' crypto in series with the transfer: SMB 3 signs or
    // encrypts whole messages (smbd's READ response, 8 MiB), so the server finishes a message's
    // crypto before its first byte leaves and smbclient checks it only after its last byte has
    // arrived, and with 2 reads outstanding neither is hidden. Derived from that structure, not
    // fitted: the crypto times are the factors above (run E, loopback); through the delay link
    // (docs/cost-model.md, "Validation across a link") the CCM postures at 1 Gbit carried what
    // wire + server crypto + client crypto per byte gives, whatever the link program's CPU share.
    p->smbclient_crypto_in_series = true;
    // Page faults per page (4 KiB there) of a large READ's payload, Samba 4.17 (smbd, and smbclient
    // `get`), counted (minor faults of smbd's connection process and of smbclient) in 64 MiB
    // gets of 8 MiB READs through the delay link, 135 gets over five points and postures
    // (tests/bench/data/cost_model_link_run4_*.jsonl and cost_model_link_diag_faults_*): the
    // medians. smbd's allocator returns a freed 8 MiB buffer to the kernel or keeps it for the
    // next READ as it happens, so a get takes whole buffers' worth (steps of 0.25 a page):
    // "none", signing and GCM 0.25-0.99 (median 0.25), CCM 0.87-1.12 (0.99), where the cipher's
    // output is one more fresh buffer; smbclient 0-0.87 (0.13) and 1.74-1.98 (1.98) for CCM.
    // The cost of a fault is the host's own (the agent's page-fault benchmark).
    p->samba_server_faults_per_page = 0.25;
    p->samba_server_ccm_faults_per_page = 1.0;
    p->smbclient_faults_per_page = 0.125;
    p->smbclient_ccm_faults_per_page = 2.0;
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
    // Compression for hosts without a compression benchmark: the reference host above, the
    // agent's XPRESS Huffman (wimlib) on 16 MiB of each benchmark corpus (MakeCorpus, seed 17),
    // one thread, rates per second of thread CPU time, median of 3 runs (2026-12-05, load
    // average 5). Decompressing stored (incompressible) data is a copy.
    const struct {
      const char* corpus;
      double ratio;
      double compress_bytes_per_second;
      double decompress_bytes_per_second;
    } kCompression[] = {
        {"text", 4.96, 143.8e6, 996e6},
        {"vm-disk", 1.88, 152.9e6, 606e6},
        {"compressed", 1.0, 138.2e6, 0},
    };
    for (const auto& c : kCompression) {
      CompressionCost cost;
      cost.algorithm = v1::COMPRESSION_LZ77_HUFFMAN;
      cost.corpus = c.corpus;
      cost.ratio = c.ratio;
      cost.compress_seconds_per_byte = 1 / c.compress_bytes_per_second;
      cost.decompress_seconds_per_byte =
          c.decompress_bytes_per_second > 0 ? 1 / c.decompress_bytes_per_second : 0;
      cost.measured = false;
      p->default_compression[c.corpus] = cost;
    }
    return p;
  }();
  return *kParameters;
}

}  // namespace smbfleet::policy::cost
