#include "policy/cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace smbfleet::policy::cost {
namespace {

namespace v1 = ::smbfleet::v1;

// Bytes of a request or a response that carries no data (SMB2 header + a small body).
constexpr double kControlMessageBytes = 150;

bool IsCipher(CryptoAlgorithm a) {
  return a == v1::AES_128_CCM || a == v1::AES_128_GCM || a == v1::AES_256_CCM ||
         a == v1::AES_256_GCM;
}

bool ValidSigningFor(Dialect dialect, CryptoAlgorithm a) {
  switch (dialect) {
    case v1::DIALECT_SMB_2_0_2:
    case v1::DIALECT_SMB_2_1:
      return a == v1::HMAC_SHA256;
    case v1::DIALECT_SMB_3_0:
    case v1::DIALECT_SMB_3_0_2:
      return a == v1::AES_128_CMAC;
    case v1::DIALECT_SMB_3_1_1:
      return a == v1::HMAC_SHA256 || a == v1::AES_128_CMAC || a == v1::AES_128_GMAC;
    default:
      return false;
  }
}

bool TruthyLabel(absl::string_view value) {
  std::string v = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  return v == "true" || v == "yes" || v == "1" || v == "on";
}

std::string FormatLink(double bits_per_second) {
  if (bits_per_second >= 1e9) {
    double g = bits_per_second / 1e9;
    return std::abs(g - std::round(g)) < 0.05 ? absl::StrFormat("%.0f Gbit", g)
                                              : absl::StrFormat("%.1f Gbit", g);
  }
  return absl::StrFormat("%.0f Mbit", bits_per_second / 1e6);
}

std::string FormatPercent(double value) {
  if (std::abs(value) < 0.05) {
    return "~0%";
  }
  return std::abs(value) < 10 ? absl::StrFormat("~%+.1f%%", value)
                              : absl::StrFormat("~%+.0f%%", value);
}

// Seconds the SMB stack (the server's, or the client's) spends on `level`'s crypto for one
// message of `bytes`.
double MessageCryptoSeconds(const HostProfile& host, const ProtectionLevel& level, double bytes,
                            const ModelParameters& p, bool client_side = false) {
  CryptoAlgorithm alg = level.effective_algorithm();
  if (alg == v1::CRYPTO_ALGORITHM_UNSPECIFIED) {
    return 0;
  }
  CryptoCost cost;
  if (auto it = host.crypto.find(alg); it != host.crypto.end()) {
    cost = it->second;
  } else if (auto d = p.default_crypto.find(alg); d != p.default_crypto.end()) {
    cost = d->second;
  } else {
    return 0;  // unknown algorithm (e.g. HMAC-MD5): priced as free, noted by the profile
  }
  const std::map<CryptoAlgorithm, double>& factors =
      host.platform != v1::PLATFORM_SAMBA
          ? p.crypto_factor
          : (client_side ? p.samba_client_crypto_factor : p.samba_crypto_factor);
  double factor = 1;
  if (auto f = factors.find(alg); f != factors.end()) {
    factor = f->second;
  }
  if (level.is_encrypted()) {
    bytes += p.transform_header_bytes;
  }
  // The factor was calibrated on 1 MiB messages, where the per-byte part is all there is; the
  // fixed per-message part is the primitive's own (small-message runs were too noisy to
  // calibrate it).
  return cost.seconds_per_call + factor * cost.seconds_per_byte * bytes;
}

struct Resolved {
  double cores;
  double wire_bytes_per_second;  // all channels
  double rtt;
  double channels;
};

Resolved Resolve(const HostProfile& host, const ModelParameters& p) {
  Resolved r;
  r.cores = host.logical_cores > 0 ? host.logical_cores : p.default_logical_cores;
  double link =
      host.link_bits_per_second > 0 ? host.link_bits_per_second : p.default_link_bits_per_second;
  r.channels = std::max<uint32_t>(1, host.channels);
  r.wire_bytes_per_second = link / 8 * p.link_efficiency;
  r.rtt = host.rtt_seconds > 0 ? host.rtt_seconds
                               : (host.wan ? p.default_wan_rtt_seconds : p.default_lan_rtt_seconds);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Workload Workload::LargeSequential() {
  Workload w;
  w.kind = Kind::kLargeSequential;
  w.io_bytes = 1 << 20;
  return w;
}

Workload Workload::SmallFiles() {
  Workload w;
  w.kind = Kind::kSmallFiles;
  w.io_bytes = 1 << 20;
  w.file_bytes = 16 << 10;
  w.ops_per_file = 4;
  return w;
}

const char* LimitName(Prediction::Limit limit) {
  switch (limit) {
    case Prediction::Limit::kLink:
      return "link";
    case Prediction::Limit::kLatency:
      return "latency";
    case Prediction::Limit::kCpu:
      return "cpu";
  }
  return "unknown";
}

std::string ClientKindName(ClientKind client) {
  return client == ClientKind::kSmbclient ? "smbclient" : "windows";
}

absl::StatusOr<ClientKind> ParseClientKind(absl::string_view text) {
  for (ClientKind client : {ClientKind::kWindows, ClientKind::kSmbclient}) {
    if (text == ClientKindName(client)) {
      return client;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("client: '", text, "' is not one of windows, smbclient"));
}

double ModelParameters::WindowBytes(ClientKind client) const {
  return client == ClientKind::kSmbclient ? smbclient_window_bytes : window_bytes;
}

bool ModelParameters::CryptoInSeries(ClientKind client) const {
  return client == ClientKind::kSmbclient && smbclient_crypto_in_series;
}

std::string Workload::Name() const {
  return kind == Kind::kLargeSequential ? "large files" : "small files";
}

ProtectionLevel ProtectionLevel::None() { return {}; }

ProtectionLevel ProtectionLevel::Signing(CryptoAlgorithm algorithm) {
  ProtectionLevel l;
  l.signing = algorithm;
  return l;
}

ProtectionLevel ProtectionLevel::Encryption(CryptoAlgorithm cipher) {
  ProtectionLevel l;
  l.cipher = cipher;
  return l;
}

ProtectionLevel ProtectionLevel::Both(CryptoAlgorithm signing, CryptoAlgorithm cipher) {
  ProtectionLevel l;
  l.signing = signing;
  l.cipher = cipher;
  return l;
}

bool ProtectionLevel::is_signed() const { return signing != v1::CRYPTO_ALGORITHM_UNSPECIFIED; }
bool ProtectionLevel::is_encrypted() const { return cipher != v1::CRYPTO_ALGORITHM_UNSPECIFIED; }

CryptoAlgorithm ProtectionLevel::effective_algorithm() const {
  return is_encrypted() ? cipher : signing;
}

std::string ProtectionLevel::ToString() const {
  if (!is_signed() && !is_encrypted()) {
    return "none";
  }
  std::string out;
  if (is_signed()) {
    out = absl::StrCat("signing ", AlgorithmName(signing));
  }
  if (is_encrypted()) {
    absl::StrAppend(&out, out.empty() ? "" : " + ", "encryption ", AlgorithmName(cipher));
  }
  return out;
}

CompressionLevel CompressionLevel::None() { return {}; }

CompressionLevel CompressionLevel::On(double ratio, const CompressionCost& cost,
                                      std::string ratio_source) {
  CompressionLevel l;
  l.enabled = true;
  l.ratio = ratio;
  l.cost = cost;
  l.ratio_source = std::move(ratio_source);
  return l;
}

double CompressionLevel::WireShare() const { return enabled && ratio > 1 ? 1 / ratio : 1.0; }

std::string CompressionLevel::ToString() const {
  if (!enabled) {
    return "none";
  }
  // "ratio 1.93", "ratio 4.5", "ratio 120": three figures at most, never an exponent.
  return absl::StrCat("compression ", CompressionAlgorithmName(cost.algorithm),
                      ratio >= 100 ? absl::StrFormat(" (ratio %.0f", ratio)
                                   : absl::StrFormat(" (ratio %.3g", ratio),
                      ratio_source.empty() ? "" : absl::StrCat(", ", ratio_source), ")");
}

std::string CompressionAlgorithmName(CompressionAlgorithm algorithm) {
  switch (algorithm) {
    case v1::COMPRESSION_LZNT1:
      return "LZNT1";
    case v1::COMPRESSION_LZ77:
      return "LZ77";
    case v1::COMPRESSION_LZ77_HUFFMAN:
      return "XPRESS Huffman";
    case v1::COMPRESSION_PATTERN_V1:
      return "Pattern_V1";
    case v1::COMPRESSION_LZ4:
      return "LZ4";
    default:
      return "unspecified";
  }
}

std::vector<ProtectionLevel> StandardLevels() {
  return {ProtectionLevel::None(),
          ProtectionLevel::Signing(v1::HMAC_SHA256),
          ProtectionLevel::Signing(v1::AES_128_CMAC),
          ProtectionLevel::Signing(v1::AES_128_GMAC),
          ProtectionLevel::Encryption(v1::AES_128_CCM),
          ProtectionLevel::Encryption(v1::AES_128_GCM),
          ProtectionLevel::Encryption(v1::AES_256_CCM),
          ProtectionLevel::Encryption(v1::AES_256_GCM),
          ProtectionLevel::Both(v1::AES_128_GMAC, v1::AES_128_GCM)};
}

std::string AlgorithmName(CryptoAlgorithm algorithm) {
  switch (algorithm) {
    case v1::AES_128_CCM:
      return "AES-128-CCM";
    case v1::AES_128_GCM:
      return "AES-128-GCM";
    case v1::AES_256_CCM:
      return "AES-256-CCM";
    case v1::AES_256_GCM:
      return "AES-256-GCM";
    case v1::AES_128_CMAC:
      return "AES-128-CMAC";
    case v1::AES_128_GMAC:
      return "AES-128-GMAC";
    case v1::HMAC_SHA256:
      return "HMAC-SHA256";
    case v1::HMAC_MD5:
      return "HMAC-MD5";
    default:
      return "unspecified";
  }
}

CryptoAlgorithm SigningAlgorithmFor(Dialect dialect, const v1::Posture& posture) {
  switch (dialect) {
    case v1::DIALECT_SMB_2_0_2:
    case v1::DIALECT_SMB_2_1:
      return v1::HMAC_SHA256;
    case v1::DIALECT_SMB_3_0:
    case v1::DIALECT_SMB_3_0_2:
      return v1::AES_128_CMAC;
    case v1::DIALECT_SMB_3_1_1:
      for (int a : posture.server().signing_algorithms()) {
        if (ValidSigningFor(dialect, static_cast<CryptoAlgorithm>(a))) {
          return static_cast<CryptoAlgorithm>(a);
        }
      }
      return posture.host().platform() == v1::PLATFORM_SAMBA ? v1::AES_128_GMAC : v1::AES_128_CMAC;
    default:
      return v1::CRYPTO_ALGORITHM_UNSPECIFIED;
  }
}

CryptoAlgorithm CipherFor(Dialect dialect, const v1::Posture& posture) {
  switch (dialect) {
    case v1::DIALECT_SMB_3_0:
    case v1::DIALECT_SMB_3_0_2:
      return v1::AES_128_CCM;
    case v1::DIALECT_SMB_3_1_1:
      for (int a : posture.server().encryption_ciphers()) {
        if (IsCipher(static_cast<CryptoAlgorithm>(a))) {
          return static_cast<CryptoAlgorithm>(a);
        }
      }
      return v1::AES_128_GCM;
    default:
      return v1::CRYPTO_ALGORITHM_UNSPECIFIED;
  }
}

Dialect TypicalDialect(const v1::Posture& posture) {
  std::map<int, int> counts;
  for (const v1::Session& s : posture.sessions()) {
    if (s.dialect() != v1::DIALECT_UNSPECIFIED) {
      ++counts[s.dialect()];
    }
  }
  int best = v1::DIALECT_UNSPECIFIED;
  int best_count = 0;
  for (const auto& [dialect, count] : counts) {
    if (count > best_count || (count == best_count && dialect > best)) {
      best = dialect;
      best_count = count;
    }
  }
  if (best != v1::DIALECT_UNSPECIFIED) {
    return static_cast<Dialect>(best);
  }
  if (posture.server().has_max_dialect() &&
      posture.server().max_dialect() != v1::DIALECT_UNSPECIFIED) {
    return posture.server().max_dialect();
  }
  return v1::DIALECT_SMB_3_1_1;
}

absl::StatusOr<double> ParseLinkSpeed(absl::string_view text) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  std::string original(text);
  double scale = 1;
  absl::string_view rest = s;
  for (absl::string_view suffix : {"bit/s", "bps", "bit", "b/s"}) {
    if (absl::ConsumeSuffix(&rest, suffix)) {
      break;
    }
  }
  rest = absl::StripTrailingAsciiWhitespace(rest);
  if (absl::ConsumeSuffix(&rest, "k")) {
    scale = 1e3;
  } else if (absl::ConsumeSuffix(&rest, "m")) {
    scale = 1e6;
  } else if (absl::ConsumeSuffix(&rest, "g")) {
    scale = 1e9;
  } else if (absl::ConsumeSuffix(&rest, "t")) {
    scale = 1e12;
  }
  rest = absl::StripTrailingAsciiWhitespace(rest);
  double value = 0;
  if (rest.empty() || !absl::SimpleAtod(rest, &value) || !std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link_speed: '", original, "' is not a speed like 1Gbit, 2.5Gbps, 100Mbit or 10G"));
  }
  double bps = value * scale;
  if (bps < 1e5 || bps > 1e13) {
    return absl::InvalidArgumentError(
        absl::StrCat("link_speed: '", original, "' is outside 100 kbit/s .. 10 Tbit/s"));
  }
  return bps;
}

std::map<CryptoAlgorithm, CryptoCost> FitCryptoCosts(
    const google::protobuf::RepeatedPtrField<v1::Benchmark>& benchmarks) {
  // algorithm -> size -> rate, for one thread and for the most threads seen.
  std::map<CryptoAlgorithm, std::map<uint64_t, double>> single;
  std::map<CryptoAlgorithm, std::pair<uint32_t, std::map<uint64_t, double>>> multi;
  for (const v1::Benchmark& b : benchmarks) {
    if (b.buffer_bytes() == 0 || !(b.bytes_per_second() > 0) ||
        !std::isfinite(b.bytes_per_second())) {
      continue;
    }
    if (b.threads() <= 1) {
      single[b.algorithm()][b.buffer_bytes()] = b.bytes_per_second();
    } else {
      auto& [threads, rates] = multi[b.algorithm()];
      if (b.threads() > threads) {
        threads = b.threads();
        rates.clear();
      }
      if (b.threads() == threads) {
        rates[b.buffer_bytes()] = b.bytes_per_second();
      }
    }
  }
  std::map<CryptoAlgorithm, CryptoCost> out;
  for (const auto& [alg, rates] : single) {
    // seconds(size) = per_call + per_byte x size. per_byte from the two largest sizes (where
    // per-call noise matters least); per_call the median of what each size leaves over, so
    // that one disturbed cell (a busy host) cannot make it up on its own.
    std::vector<std::pair<double, double>> points;  // size, seconds per call
    for (const auto& [size, rate] : rates) {
      points.emplace_back(static_cast<double>(size), static_cast<double>(size) / rate);
    }
    auto large = *rates.rbegin();
    CryptoCost cost;
    cost.measured = true;
    const auto& [s1, t1] = points.back();
    cost.seconds_per_byte = t1 / s1;
    if (points.size() >= 2) {
      const auto& [s0, t0] = points[points.size() - 2];
      if (t1 > t0) {
        cost.seconds_per_byte = (t1 - t0) / (s1 - s0);
      }
      std::vector<double> per_call;
      per_call.reserve(points.size());
      for (const auto& [size, seconds] : points) {
        per_call.push_back(std::max(0.0, seconds - cost.seconds_per_byte * size));
      }
      std::sort(per_call.begin(), per_call.end());
      cost.seconds_per_call =
          per_call.size() % 2
              ? per_call[per_call.size() / 2]
              : (per_call[per_call.size() / 2 - 1] + per_call[per_call.size() / 2]) / 2;
    }
    if (auto m = multi.find(alg); m != multi.end()) {
      auto mr = m->second.second.find(large.first);
      if (mr != m->second.second.end()) {
        cost.all_core_speedup = std::max(1.0, mr->second / large.second);
      }
    }
    out[alg] = cost;
  }
  return out;
}

std::map<std::string, CompressionCost> FitCompressionCosts(
    const google::protobuf::RepeatedPtrField<v1::CompressionBenchmark>& benchmarks) {
  // corpus -> algorithm -> the one-thread row with the largest input.
  std::map<std::string, std::map<int, const v1::CompressionBenchmark*>> best;
  for (const v1::CompressionBenchmark& b : benchmarks) {
    if (b.threads() > 1 || b.corpus().empty() || b.input_bytes() == 0 ||
        !(b.compress_bytes_per_second() > 0) || !std::isfinite(b.compress_bytes_per_second()) ||
        !(b.ratio() > 0) || !std::isfinite(b.ratio()) ||
        (b.algorithm() != v1::COMPRESSION_LZ77_HUFFMAN && b.algorithm() != v1::COMPRESSION_LZ4)) {
      continue;
    }
    const v1::CompressionBenchmark*& slot = best[b.corpus()][b.algorithm()];
    if (slot == nullptr || b.input_bytes() > slot->input_bytes()) {
      slot = &b;
    }
  }
  std::map<std::string, CompressionCost> out;
  for (const auto& [corpus, rows] : best) {
    auto it = rows.find(v1::COMPRESSION_LZ77_HUFFMAN);
    if (it == rows.end()) {
      it = rows.begin();  // LZ4 only
    }
    const v1::CompressionBenchmark& b = *it->second;
    CompressionCost cost;
    cost.algorithm = b.algorithm();
    cost.corpus = corpus;
    cost.ratio = b.ratio();
    cost.compress_seconds_per_byte = 1 / b.compress_bytes_per_second();
    if (b.decompress_bytes_per_second() > 0 && std::isfinite(b.decompress_bytes_per_second())) {
      cost.decompress_seconds_per_byte = 1 / b.decompress_bytes_per_second();
    }
    cost.measured = true;
    out[corpus] = cost;
  }
  return out;
}

CompressionCost CompressionCostFor(const HostProfile& host, absl::string_view corpus,
                                   const ModelParameters& p) {
  std::string key(corpus);
  if (auto it = host.compression.find(key); it != host.compression.end()) {
    return it->second;
  }
  if (auto it = p.default_compression.find(key); it != p.default_compression.end()) {
    return it->second;
  }
  return {};
}

CompressionCost CompressionCostForRatio(const HostProfile& host, double ratio,
                                        const ModelParameters& p) {
  const std::map<std::string, CompressionCost>& figures =
      host.compression.empty() ? p.default_compression : host.compression;
  const CompressionCost* nearest = nullptr;
  for (const auto& [corpus, cost] : figures) {
    if (nearest == nullptr ||
        std::abs(std::log(cost.ratio / ratio)) < std::abs(std::log(nearest->ratio / ratio))) {
      nearest = &cost;
    }
  }
  if (nearest == nullptr || !(ratio > 0)) {
    return {};
  }
  CompressionCost out = *nearest;
  out.ratio = ratio;
  return out;
}

HostProfile::Multichannel MultichannelFromNics(const v1::Posture& posture) {
  using M = HostProfile::Multichannel;
  if (posture.nics_size() == 0) return M::kUnknown;
  bool any_state_known = false;
  for (const v1::Nic& nic : posture.nics()) any_state_known = any_state_known || nic.has_up();
  int up = 0;
  bool rss_known = false;
  for (const v1::Nic& nic : posture.nics()) {
    if (any_state_known && !(nic.has_up() && nic.up())) continue;
    ++up;
    // SMB's RssCapable alone (no queue count from Get-NetAdapterRss) is what Windows itself
    // opens several channels on; RSS switched off or one queue is one core.
    bool rss =
        !(nic.has_rss_enabled() && !nic.rss_enabled()) &&
        (nic.has_rss_queues() ? nic.rss_queues() > 1 && (nic.rss_capable() || nic.rss_enabled())
                              : nic.has_rss_capable() && nic.rss_capable());
    if (rss) return M::kPossible;
    rss_known = rss_known || nic.has_rss_capable() || nic.has_rss_enabled() || nic.has_rss_queues();
  }
  if (up >= 2) return M::kPossible;
  // One NIC (or none up): not possible only when its RSS was reported.
  return (up == 0 || rss_known) ? M::kNotPossible : M::kUnknown;
}

std::string MultichannelText(HostProfile::Multichannel m) {
  switch (m) {
    case HostProfile::Multichannel::kPossible:
      return "possible";
    case HostProfile::Multichannel::kNotPossible:
      return "not possible (one NIC without RSS: crypto on one core)";
    case HostProfile::Multichannel::kUnknown:
      break;
  }
  return "unknown";
}

double FaultSecondsPerByte(const HostProfile& host, const ProtectionLevel& level, bool client_side,
                           const ModelParameters& p) {
  if (host.page_fault_seconds <= 0 || host.page_bytes <= 0) return 0;
  if (client_side ? !host.client_on_host : host.platform != v1::PLATFORM_SAMBA) return 0;
  const CryptoAlgorithm alg = level.effective_algorithm();
  const bool ccm = alg == v1::AES_128_CCM || alg == v1::AES_256_CCM;
  double faults_per_page =
      client_side ? (ccm ? p.smbclient_ccm_faults_per_page : p.smbclient_faults_per_page)
                  : (ccm ? p.samba_server_ccm_faults_per_page : p.samba_server_faults_per_page);
  return faults_per_page * host.page_fault_seconds / host.page_bytes;
}

HostProfile ProfileFromPosture(const v1::Posture& posture) {
  const ModelParameters& p = DefaultParameters();
  HostProfile host;
  host.multichannel = MultichannelFromNics(posture);
  host.hostname = posture.host().hostname();
  host.platform = posture.host().platform();
  host.logical_cores = posture.host().has_logical_cores() ? posture.host().logical_cores() : 0;
  if (host.logical_cores == 0) {
    host.assumptions.push_back(
        absl::StrCat("logical cores unknown: assumed ", p.default_logical_cores));
  }
  const auto& labels = posture.host().labels();

  // Link: the label wins (it is what the operator knows about the path to the clients).
  if (auto it = labels.find("link_speed"); it != labels.end()) {
    absl::StatusOr<double> bps = ParseLinkSpeed(it->second);
    if (bps.ok()) {
      host.link_bits_per_second = *bps;
    } else {
      host.assumptions.push_back(std::string(bps.status().message()));
    }
  }
  if (host.link_bits_per_second == 0) {
    uint64_t fastest = 0;
    uint32_t at_fastest = 0;
    for (const v1::Nic& nic : posture.nics()) {
      if (nic.has_up() && !nic.up()) continue;  // a port without a link carries nothing
      if (nic.link_speed_bps() > fastest) {
        fastest = nic.link_speed_bps();
        at_fastest = 1;
      } else if (nic.link_speed_bps() == fastest && fastest > 0) {
        ++at_fastest;
      }
    }
    uint32_t channels = 1;
    if (posture.server().multichannel_enabled()) {
      // Multichannel spreads a session over the NICs of the top speed.
      channels = std::max<uint32_t>(1, at_fastest);
      for (const v1::MultichannelConnection& mc : posture.multichannel_connections()) {
        channels = std::max(channels, mc.current_channels());
      }
    }
    if (fastest > 0) {
      host.link_bits_per_second = static_cast<double>(fastest);
      host.channels = std::min(channels, std::max<uint32_t>(1, at_fastest));
      host.link_bits_per_second *= host.channels;
    }
  }
  if (host.link_bits_per_second == 0) {
    host.assumptions.push_back(
        absl::StrCat("link speed unknown: assumed ", FormatLink(p.default_link_bits_per_second)));
  }

  if (auto it = labels.find("wan"); it != labels.end()) {
    host.wan = TruthyLabel(it->second);
  }
  // The baseline policy's selector for WAN hosts (wan-compression) is the label link=wan.
  if (auto it = labels.find("link");
      it != labels.end() &&
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(it->second)) == "wan") {
    host.wan = true;
  }
  if (auto it = labels.find("rtt_ms"); it != labels.end()) {
    double ms = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(it->second), &ms) && std::isfinite(ms) &&
        ms > 0 && ms < 10'000) {
      host.rtt_seconds = ms / 1000;
      host.rtt_source = "label rtt_ms";
    } else {
      host.assumptions.push_back(
          absl::StrCat("rtt_ms: '", it->second, "' is not a positive number of milliseconds"));
    }
  }
  if (host.rtt_seconds == 0) {
    // No label: the round trip the kernel measured on the live sessions (the median of their
    // min_rtt, the least disturbed by queueing); a session without a reading is left out.
    std::vector<double> min_rtts;
    for (const v1::Session& s : posture.sessions()) {
      if (s.has_min_rtt_us() && s.min_rtt_us() > 0) {
        min_rtts.push_back(s.min_rtt_us());
      }
    }
    if (!min_rtts.empty()) {
      std::sort(min_rtts.begin(), min_rtts.end());
      size_t n = min_rtts.size();
      double us = n % 2 ? min_rtts[n / 2] : (min_rtts[n / 2 - 1] + min_rtts[n / 2]) / 2;
      host.rtt_seconds = us / 1e6;
      host.rtt_source = absl::StrFormat("median min_rtt of %d session%s", n, n == 1 ? "" : "s");
    }
  }
  if (host.rtt_seconds == 0) {
    double rtt = host.wan ? p.default_wan_rtt_seconds : p.default_lan_rtt_seconds;
    host.rtt_source = host.wan ? "WAN default" : "LAN default";
    host.assumptions.push_back(
        absl::StrFormat("RTT unknown: assumed %g ms (%s)", rtt * 1000, host.wan ? "WAN" : "LAN"));
  }

  host.dialect = TypicalDialect(posture);
  host.crypto = FitCryptoCosts(posture.benchmarks());
  std::vector<std::string> missing;
  for (const ProtectionLevel& level : StandardLevels()) {
    CryptoAlgorithm alg = level.effective_algorithm();
    if (alg != v1::CRYPTO_ALGORITHM_UNSPECIFIED && host.crypto.count(alg) == 0 &&
        std::find(missing.begin(), missing.end(), AlgorithmName(alg)) == missing.end()) {
      missing.push_back(AlgorithmName(alg));
    }
  }
  if (!missing.empty()) {
    host.assumptions.push_back(absl::StrCat("no benchmark for ", absl::StrJoin(missing, ", "),
                                            ": reference host figures used"));
  }
  // The cost of a page fault, where the host measured one (a figure outside 0..1 ms is not a
  // measurement of a fault).
  const v1::MemoryBenchmark& memory = posture.memory_benchmark();
  if (memory.page_fault_seconds() > 0 && memory.page_fault_seconds() < 1e-3) {
    host.page_fault_seconds = memory.page_fault_seconds();
    if (memory.page_bytes() > 0) host.page_bytes = static_cast<double>(memory.page_bytes());
  } else if (host.platform == v1::PLATFORM_SAMBA) {
    host.assumptions.push_back(
        memory.page_fault_seconds() == 0
            ? std::string("page fault cost not measured: smbd's faults not counted")
            : absl::StrFormat("page fault cost of %g s refused (not within 0 to 1 ms): smbd's "
                              "faults not counted",
                              memory.page_fault_seconds()));
  }
  host.compression = FitCompressionCosts(posture.compression_benchmarks());
  // No compression benchmark is noted where compression is priced (CompressionCost::measured),
  // not here: most changes do not touch compression.
  for (const auto& [corpus, cost] : host.compression) {
    if (cost.algorithm != v1::COMPRESSION_LZ77_HUFFMAN) {
      host.assumptions.push_back(absl::StrCat("compression of ", corpus, ": ",
                                              CompressionAlgorithmName(cost.algorithm),
                                              " figures (no XPRESS Huffman benchmark)"));
    }
  }
  return host;
}

// ---------------------------------------------------------------------------------------------

Prediction Predict(const HostProfile& host, const ProtectionLevel& level, const Workload& workload,
                   const ModelParameters& p) {
  return Predict(host, level, CompressionLevel::None(), workload, p);
}

Prediction Predict(const HostProfile& host, const ProtectionLevel& level,
                   const CompressionLevel& compression, const Workload& workload,
                   const ModelParameters& p) {
  const Resolved r = Resolve(host, p);
  Prediction out;
  const double io = std::max<double>(1, static_cast<double>(workload.io_bytes));
  // Compression runs first; what it sends (plus its transform header) is what gets signed or
  // encrypted and what crosses the wire. A message that does not shrink goes as it is.
  const bool shrinks = compression.enabled && compression.ratio > 1;
  auto on_wire = [&](double payload) {
    return shrinks ? payload * compression.WireShare() + p.compression_header_bytes : payload;
  };
  // CPU per payload byte of the one that compresses and of the one that decompresses.
  const bool server_sends = workload.direction == Workload::Direction::kRead;
  double compress_cpu = compression.enabled ? compression.cost.compress_seconds_per_byte : 0;
  double decompress_cpu = shrinks ? compression.cost.decompress_seconds_per_byte : 0;
  const double server_codec = server_sends ? compress_cpu : decompress_cpu;
  const double client_codec = server_sends ? decompress_cpu : compress_cpu;
  const double wire_overhead =
      (on_wire(io) + (level.is_encrypted() ? p.transform_header_bytes : 0)) / io;
  double plain_server_cpu_per_byte = 0;  // the same workload with no crypto, no compression

  if (workload.kind == Workload::Kind::kLargeSequential) {
    // One data message and one control message per I/O, processed by both ends.
    auto crypto = [&](bool client_side) {
      return MessageCryptoSeconds(host, level, on_wire(io), p, client_side) +
             MessageCryptoSeconds(host, level, kControlMessageBytes, p, client_side);
    };
    // Each end reads a message into fresh pages: their faults, at this host's cost of one.
    const double plain_faults = FaultSecondsPerByte(host, ProtectionLevel::None(), false, p);
    double server_plain =
        (p.server_base_cpu_seconds_per_byte + plain_faults) * io + p.server_cpu_seconds_per_op;
    double server_io = server_plain +
                       (FaultSecondsPerByte(host, level, false, p) - plain_faults) * io +
                       server_codec * io + crypto(false);
    double client_io =
        (p.client_base_cpu_seconds_per_byte + FaultSecondsPerByte(host, level, true, p)) * io +
        p.client_cpu_seconds_per_op + client_codec * io + crypto(true);
    plain_server_cpu_per_byte = server_plain / io;
    out.server_cpu_seconds_per_byte = server_io / io;
    out.client_cpu_seconds_per_byte = client_io / io;

    // A connection is served by one thread at a time (smbd is one process per client; Windows
    // spreads channels, not one stream, over cores): one core per channel.
    double parallel = std::min(r.channels, r.cores);
    double cpu_seconds_per_io = server_io;
    if (host.client_on_host) {
      // Client and server on one host, each on a core of its own (the loopback lab pins
      // them): reads are pipelined, so the slower side sets the pace.
      cpu_seconds_per_io = std::max(server_io, client_io);
    }
    double cpu_rate = parallel * io / cpu_seconds_per_io;
    double wire_rate = r.wire_bytes_per_second / wire_overhead;
    // The window holds wire bytes: compressed data fits more payload in flight.
    double latency_rate = r.channels * p.WindowBytes(workload.client) / r.rtt / (on_wire(io) / io);
    if (p.CryptoInSeries(workload.client)) {
      // Each channel's bytes wait for the server's crypto before they leave and for the
      // client's after they arrive: both add to the time per byte of the wire and of the window.
      double serial_seconds_per_byte = (crypto(false) + crypto(true)) / io / r.channels;
      wire_rate = 1 / (1 / wire_rate + serial_seconds_per_byte);
      latency_rate = 1 / (1 / latency_rate + serial_seconds_per_byte);
    }

    out.throughput_bytes_per_second = cpu_rate;
    out.limit = Prediction::Limit::kCpu;
    if (wire_rate < out.throughput_bytes_per_second) {
      out.throughput_bytes_per_second = wire_rate;
      out.limit = Prediction::Limit::kLink;
    }
    if (latency_rate < out.throughput_bytes_per_second) {
      out.throughput_bytes_per_second = latency_rate;
      out.limit = Prediction::Limit::kLatency;
    }
  } else {
    // One file after another: every request waits for its response.
    const double file = std::max<double>(1, static_cast<double>(workload.file_bytes));
    const double data_ops = std::ceil(file / io);
    const double ops = workload.ops_per_file + data_ops;
    const double control_messages = 2 * ops - data_ops;
    auto crypto = [&](bool client_side) {
      return control_messages *
                 MessageCryptoSeconds(host, level, kControlMessageBytes, p, client_side) +
             data_ops * MessageCryptoSeconds(host, level, on_wire(file / data_ops), p, client_side);
    };
    double server_plain =
        p.server_base_cpu_seconds_per_byte * file + p.server_cpu_seconds_per_op * ops;
    double server_file = server_plain + server_codec * file + crypto(false);
    double client_file = p.client_base_cpu_seconds_per_byte * file +
                         p.client_cpu_seconds_per_op * ops + client_codec * file + crypto(true);
    plain_server_cpu_per_byte = server_plain / file;
    out.server_cpu_seconds_per_byte = server_file / file;
    out.client_cpu_seconds_per_byte = client_file / file;
    // Wire bytes per payload byte: the compressed data messages, plus the encryption header
    // share of wire_overhead.
    double file_overhead =
        wire_overhead - on_wire(io) / io + data_ops * on_wire(file / data_ops) / file;
    double wire = file * file_overhead / r.wire_bytes_per_second;
    double seconds_per_file = ops * r.rtt + server_file + client_file + wire;
    out.files_per_second = 1 / seconds_per_file;
    out.throughput_bytes_per_second = file * out.files_per_second;
    double cpu_part = server_file + client_file;
    double rtt_part = ops * r.rtt;
    out.limit = cpu_part >= rtt_part && cpu_part >= wire
                    ? Prediction::Limit::kCpu
                    : (rtt_part >= wire ? Prediction::Limit::kLatency : Prediction::Limit::kLink);
  }

  if (host.baseline_cpu_fraction > 0 && host.baseline_throughput_bytes_per_second > 0) {
    // The host's own CPU at a known rate, scaled with throughput, plus what crypto and
    // compression add per byte on top of the plain SMB path.
    double extra = out.server_cpu_seconds_per_byte - plain_server_cpu_per_byte;
    out.cpu_fraction = std::min(1.0, host.baseline_cpu_fraction * out.throughput_bytes_per_second /
                                             host.baseline_throughput_bytes_per_second +
                                         out.throughput_bytes_per_second * extra / r.cores);
    return out;
  }
  double host_cpu_per_byte =
      out.server_cpu_seconds_per_byte + (host.client_on_host ? out.client_cpu_seconds_per_byte : 0);
  out.cpu_fraction = std::min(1.0, out.throughput_bytes_per_second * host_cpu_per_byte / r.cores);
  return out;
}

ChangeCost EstimateChangeCost(const v1::Posture& posture, const ProtectionLevel& before,
                              const ProtectionLevel& after) {
  return EstimateChangeCost(ProfileFromPosture(posture), before, after, DefaultParameters());
}

ChangeCost EstimateChangeCost(const HostProfile& host, const ProtectionLevel& before,
                              const ProtectionLevel& after, const ModelParameters& p) {
  return EstimateChangeCost(host, before, CompressionLevel::None(), after, CompressionLevel::None(),
                            p);
}

ChangeCost EstimateChangeCost(const HostProfile& host, const ProtectionLevel& before,
                              const CompressionLevel& compression_before,
                              const ProtectionLevel& after,
                              const CompressionLevel& compression_after, const ModelParameters& p) {
  ChangeCost cost;
  cost.before = before;
  cost.after = after;
  cost.compression_before = compression_before;
  cost.compression_after = compression_after;
  cost.host = host;
  for (const Workload& w : {Workload::LargeSequential(), Workload::SmallFiles()}) {
    WorkloadCost wc;
    wc.workload = w;
    wc.before = Predict(host, before, compression_before, w, p);
    wc.after = Predict(host, after, compression_after, w, p);
    if (wc.before.throughput_bytes_per_second > 0) {
      wc.throughput_change_percent =
          (wc.after.throughput_bytes_per_second / wc.before.throughput_bytes_per_second - 1) * 100;
    }
    wc.cpu_change_points = (wc.after.cpu_fraction - wc.before.cpu_fraction) * 100;
    cost.workloads.push_back(wc);
  }

  std::vector<std::string> what;
  if (!(before == after) || compression_before.enabled == compression_after.enabled) {
    if (!before.is_signed() && !before.is_encrypted()) {
      what.push_back(absl::StrCat("enabling ", after.ToString()));
    } else if (!after.is_signed() && !after.is_encrypted()) {
      what.push_back(absl::StrCat("disabling ", before.ToString()));
    } else {
      what.push_back(absl::StrCat("changing ", before.ToString(), " to ", after.ToString()));
    }
  }
  if (compression_before.enabled != compression_after.enabled) {
    what.push_back(compression_after.enabled
                       ? absl::StrCat("enabling ", compression_after.ToString())
                       : absl::StrCat("disabling ", compression_before.ToString()));
  }
  const Resolved r = Resolve(host, p);
  std::string where = FormatLink(r.wire_bytes_per_second * 8 / p.link_efficiency);
  if (r.rtt >= 0.001) {
    absl::StrAppend(&where, absl::StrFormat(", RTT %g ms", std::round(r.rtt * 10000) / 10));
  }
  const WorkloadCost& large = cost.workloads[0];
  const WorkloadCost& small = cost.workloads[1];
  cost.summary =
      absl::StrCat(absl::StrJoin(what, " and "),
                   host.hostname.empty() ? "" : absl::StrCat(" on ", host.hostname), ": ",
                   FormatPercent(large.throughput_change_percent), " throughput on large files, ",
                   FormatPercent(large.cpu_change_points), " CPU at ", where, "; small files ",
                   FormatPercent(small.throughput_change_percent));
  return cost;
}

}  // namespace smbfleet::policy::cost
