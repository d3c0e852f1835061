#ifndef SMBFLEET_POLICY_COST_COST_MODEL_H_
#define SMBFLEET_POLICY_COST_COST_MODEL_H_

// What SMB signing, encryption and compression cost on one host: predicted throughput and CPU
// for a protection level (and compression) and a workload, from the host's own crypto and
// compression benchmarks, cores, link and RTT.
//
// Pure: no I/O, no clock, no logging. Every parameter that is not read from the host is in
// ModelParameters, with the run it was calibrated from (docs/cost-model.md has the table of
// predicted vs measured).
//
// The shape of the model, per workload:
//   time per byte on the wire    = 1 / (link rate x link efficiency x channels)
//   time per byte by latency     = RTT / bytes in flight (window) per channel
//   server CPU per byte          = base + crypto_factor(alg) x EVP cost(alg, message size)
//   small files add, per file,   ops_per_file x (RTT + per-op CPU + per-message crypto)
// Throughput is bounded by the slowest of wire, latency and CPU; CPU is the server's CPU at
// that throughput as a fraction of all its logical cores.
// Compression (ratio r) happens before encryption: the wire, the window and the crypto carry
// 1/r of the bytes, and the sender's CPU adds compress(corpus) per byte, the receiver's
// decompress(corpus) per byte.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy::cost {

using ::smbfleet::v1::CompressionAlgorithm;
using ::smbfleet::v1::CryptoAlgorithm;
using ::smbfleet::v1::Dialect;

// ---------------------------------------------------------------------------------------------
// Workload profiles.

// The SMB client that issues the reads. How many bytes a connection keeps in flight is set by
// the client's design (reads outstanding x read size) and by the TCP it runs over
// (ModelParameters::WindowBytes).
enum class ClientKind {
  kWindows,    // the anchor's Windows client (the published 108 -> 31 MB/s case)
  kSmbclient,  // Samba's smbclient (get) against smbd on Linux
};

// "windows", "smbclient".
std::string ClientKindName(ClientKind client);
// The inverse of ClientKindName; an error naming the text otherwise.
absl::StatusOr<ClientKind> ParseClientKind(absl::string_view text);

struct Workload {
  enum class Kind { kLargeSequential, kSmallFiles };
  enum class Direction { kRead, kWrite };  // from the client's view: read = server sends data

  Kind kind = Kind::kLargeSequential;
  Direction direction = Direction::kRead;
  // Bytes per SMB2 READ/WRITE request.
  uint64_t io_bytes = 1 << 20;
  // Small files: bytes per file and SMB requests per file besides the data ones
  // (CREATE, QUERY_INFO, CLOSE, ...).
  uint64_t file_bytes = 0;
  uint32_t ops_per_file = 0;
  // Who reads: sets the bytes in flight per channel.
  ClientKind client = ClientKind::kWindows;

  // Large sequential copy: 1 MiB reads (what Windows and smbclient issue on a fast link).
  static Workload LargeSequential();
  // Small files: 16 KiB files, 4 requests each besides the READ (what Windows clients send:
  // CREATE, QUERY_INFO x2, CLOSE).
  static Workload SmallFiles();

  // "large files" / "small files" (used in summaries).
  std::string Name() const;
};

// ---------------------------------------------------------------------------------------------
// Protection levels.

// Signing and/or encryption. CRYPTO_ALGORITHM_UNSPECIFIED in a field means "not applied".
// Encryption supersedes signing on the wire (MS-SMB2: an encrypted message is not signed
// separately), so a level with a cipher costs the cipher only, whatever `signing` says.
struct ProtectionLevel {
  CryptoAlgorithm signing = ::smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED;
  CryptoAlgorithm cipher = ::smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED;

  static ProtectionLevel None();
  static ProtectionLevel Signing(CryptoAlgorithm algorithm);
  static ProtectionLevel Encryption(CryptoAlgorithm cipher);
  static ProtectionLevel Both(CryptoAlgorithm signing, CryptoAlgorithm cipher);

  bool is_signed() const;
  bool is_encrypted() const;
  // The algorithm that actually runs per byte: the cipher if any, else the signing algorithm,
  // else UNSPECIFIED.
  CryptoAlgorithm effective_algorithm() const;
  // "none", "signing AES-128-GMAC", "encryption AES-128-GCM", "signing AES-128-CMAC +
  // encryption AES-128-CCM".
  std::string ToString() const;

  bool operator==(const ProtectionLevel& other) const {
    return signing == other.signing && cipher == other.cipher;
  }
};

// Every level the model knows how to price: none; signing with HMAC-SHA256, AES-128-CMAC,
// AES-128-GMAC; encryption with AES-128-CCM, AES-128-GCM, AES-256-CCM, AES-256-GCM; both.
std::vector<ProtectionLevel> StandardLevels();

// What a dialect signs with: HMAC-SHA256 on 2.0.2/2.1, AES-128-CMAC on 3.0/3.0.2; on 3.1.1 the
// first of server.signing_algorithms valid there, else AES-128-GMAC on Samba (its default) and
// AES-128-CMAC elsewhere (the algorithm every 3.1.1 peer supports). UNSPECIFIED for SMB1 and
// unknown dialects.
CryptoAlgorithm SigningAlgorithmFor(Dialect dialect, const ::smbfleet::v1::Posture& posture);
// What a dialect encrypts with: AES-128-CCM on 3.0/3.0.2; on 3.1.1 the first of
// server.encryption_ciphers, else AES-128-GCM. UNSPECIFIED below 3.0 (no encryption).
CryptoAlgorithm CipherFor(Dialect dialect, const ::smbfleet::v1::Posture& posture);
// The dialect most live sessions use; else server.max_dialect; else SMB 3.1.1.
Dialect TypicalDialect(const ::smbfleet::v1::Posture& posture);

// "AES-128-GCM", "HMAC-SHA256", ... (the names smbstatus and Windows docs use).
std::string AlgorithmName(CryptoAlgorithm algorithm);

// ---------------------------------------------------------------------------------------------
// Compression.

// One algorithm's measured single-thread compression of one corpus
// (Posture.compression_benchmarks).
struct CompressionCost {
  CompressionAlgorithm algorithm = ::smbfleet::v1::COMPRESSION_ALGORITHM_UNSPECIFIED;
  std::string corpus;                      // "text", "vm-disk", "compressed"
  double ratio = 0;                        // input bytes / compressed bytes; 0 = unknown
  double compress_seconds_per_byte = 0;    // per input byte, one thread
  double decompress_seconds_per_byte = 0;  // per output (uncompressed) byte, one thread
  bool measured = false;                   // false: a reference default (see ModelParameters)
};

// SMB compression of the traffic (MS-SMB2 3.1.1 compression transform): off, or on for data
// that compresses `ratio` to 1 at the speeds of `cost`. A ratio below 1 is sent uncompressed
// (Windows and Samba send the original when compressing does not shrink it), at the CPU cost of
// having tried.
struct CompressionLevel {
  bool enabled = false;
  double ratio = 1;
  CompressionCost cost;
  // Where the ratio comes from, e.g. "sampled on Backups", "vm-disk benchmark".
  std::string ratio_source;

  static CompressionLevel None();
  static CompressionLevel On(double ratio, const CompressionCost& cost, std::string ratio_source);
  // Wire bytes per payload byte: 1 / max(1, ratio) when enabled, else 1.
  double WireShare() const;
  // "none", "compression XPRESS Huffman (ratio 2.41, vm-disk benchmark)".
  std::string ToString() const;
};

// "XPRESS Huffman", "LZ4", "LZNT1", ... (the names MS-XCA and Windows docs use).
std::string CompressionAlgorithmName(CompressionAlgorithm algorithm);

// Fits CompressionCost per corpus from the one-thread benchmark rows of XPRESS Huffman
// (COMPRESSION_LZ77_HUFFMAN, what Windows negotiates first); a corpus with LZ4 rows only gets
// the LZ4 figures, named as such by `algorithm`. The largest input per corpus wins.
std::map<std::string, CompressionCost> FitCompressionCosts(
    const google::protobuf::RepeatedPtrField<::smbfleet::v1::CompressionBenchmark>& benchmarks);

// ---------------------------------------------------------------------------------------------
// Host profile.

// One algorithm's measured single-thread cost: seconds = per_call + per_byte x bytes, fitted
// from the benchmark rows (per_byte from the two largest sizes, per_call the median residual).
struct CryptoCost {
  double seconds_per_call = 0;
  double seconds_per_byte = 0;
  double all_core_speedup = 1;  // all-threads rate / one-thread rate at the largest buffer
  bool measured = false;        // false: a reference default (see ModelParameters)
};

struct HostProfile {
  std::string hostname;
  ::smbfleet::v1::Platform platform = ::smbfleet::v1::PLATFORM_UNSPECIFIED;
  uint32_t logical_cores = 0;       // host.logical_cores; 0 = unknown (model assumes 4)
  double link_bits_per_second = 0;  // label link_speed, else the fastest NIC; 0 = unknown
  uint32_t channels = 1;            // multichannel: usable channels (NICs or current_channels)
  // Whether the NICs allow SMB multichannel at all: several NICs up, or one with RSS over more
  // than one receive queue (Windows opens 4 channels on an RSS NIC). Not possible means one
  // connection on one NIC without RSS: signing and encryption run on one core.
  enum class Multichannel { kUnknown, kPossible, kNotPossible };
  Multichannel multichannel = Multichannel::kUnknown;
  // Label rtt_ms, else the median of the sessions' measured min_rtt_us; 0 = unknown (LAN
  // default, or WAN default).
  double rtt_seconds = 0;
  // Where rtt_seconds comes from: "label rtt_ms", "median min_rtt of 3 sessions",
  // "LAN default", "WAN default"; empty for a profile not built from a posture.
  std::string rtt_source;
  bool wan = false;  // label wan=true|yes|1
  Dialect dialect = ::smbfleet::v1::DIALECT_UNSPECIFIED;
  // The SMB client runs on this host, on a core of its own (the loopback lab): the slower of
  // the two sets the pace of a large transfer, and the client's CPU adds to the host's.
  bool client_on_host = false;
  std::map<CryptoAlgorithm, CryptoCost> crypto;
  // Compression figures per benchmark corpus ("text", "vm-disk", "compressed").
  std::map<std::string, CompressionCost> compression;
  // The host's measured CPU cost of one minor page fault (Posture.memory_benchmark) and its
  // page size; 0 = not measured (no fault term).
  double page_fault_seconds = 0;
  double page_bytes = 4096;
  // The host's measured CPU (fraction of all cores) at a measured throughput without
  // compression, when an operator knows it (tests: the published case). With both set, CPU is
  // predicted as that CPU scaled with throughput plus the model's extra CPU per byte; else from
  // the model's own CPU per byte. 0 = unknown.
  double baseline_cpu_fraction = 0;
  double baseline_throughput_bytes_per_second = 0;
  // Everything the profile had to assume, e.g. "link speed unknown: assumed 1 Gbit".
  std::vector<std::string> assumptions;
};

// Builds the profile from a posture: host.logical_cores, host.platform, benchmarks[],
// memory_benchmark (the cost of a page fault),
// nics[] (link_speed_bps of the NICs not known to be down; up, rss_* for multichannel) /
// multichannel_connections[], labels link_speed ("1Gbit", "10G",
// "100Mbit", "2.5Gbps"), rtt_ms ("0.25"), wan ("true"), sessions[].min_rtt_us (the RTT when
// rtt_ms is absent), and TypicalDialect().
HostProfile ProfileFromPosture(const ::smbfleet::v1::Posture& posture);

// From posture.nics[]: possible with two or more NICs up (a NIC of unknown state counts as up
// when every NIC's state is unknown) or one NIC with RSS: enabled or capable with more than one
// receive queue, or SMB's RssCapable when the queue count is not reported; not possible when the
// NICs are known and neither holds; unknown without NICs or when the one NIC's RSS is not
// reported.
HostProfile::Multichannel MultichannelFromNics(const ::smbfleet::v1::Posture& posture);

// "possible", "not possible (one NIC without RSS: crypto on one core)", "unknown".
std::string MultichannelText(HostProfile::Multichannel m);

// Fits CryptoCost per algorithm from benchmark rows (one-thread rows for the fit, all-thread
// rows for the speedup). Algorithms without rows are absent.
std::map<CryptoAlgorithm, CryptoCost> FitCryptoCosts(
    const google::protobuf::RepeatedPtrField<::smbfleet::v1::Benchmark>& benchmarks);

// "1Gbit" -> 1e9, "2.5Gbps" -> 2.5e9, "100Mbit" -> 1e8, "10G" -> 1e10, "1000000000" -> 1e9.
absl::StatusOr<double> ParseLinkSpeed(absl::string_view text);

// ---------------------------------------------------------------------------------------------
// Model parameters (calibrated; see docs/cost-model.md for the runs).

struct ModelParameters {
  // Server CPU seconds per payload byte moved by SMB with no crypto (copy, TCP, VFS).
  double server_base_cpu_seconds_per_byte = 0;
  // Client CPU seconds per payload byte (only used when HostProfile::client_on_host).
  double client_base_cpu_seconds_per_byte = 0;
  // Server and client CPU seconds per SMB request, no crypto (parsing, VFS, syscalls).
  double server_cpu_seconds_per_op = 0;
  double client_cpu_seconds_per_op = 0;
  // SMB stack crypto time / OpenSSL EVP time for the same bytes (applied to the per-byte part of
  // CryptoCost; the per-message part is taken as measured), per algorithm: what signing
  // or encrypting a message really costs the SMB stack (its crypto library plus the copies
  // and bookkeeping of that path) relative to the host's EVP benchmark. Missing = 1.
  // crypto_factor: hosts other than Samba (Windows/CNG: uncalibrated, see docs).
  std::map<CryptoAlgorithm, double> crypto_factor;
  // Samba (GnuTLS/nettle), server side and client (smbclient) side.
  std::map<CryptoAlgorithm, double> samba_crypto_factor;
  std::map<CryptoAlgorithm, double> samba_client_crypto_factor;
  // Extra bytes a protected message carries (SMB2 transform header 52 B; signature in-header).
  double transform_header_bytes = 52;
  // Bytes in flight per channel: throughput <= window / RTT. window_bytes is the anchor's
  // Windows client's; smbclient_window_bytes smbclient's over Linux TCP (parameters.cc has the
  // derivation of each).
  double window_bytes = 0;
  double smbclient_window_bytes = 0;
  // The window of `client`.
  double WindowBytes(ClientKind client) const;
  // Whether the client's reads pay their crypto in series with the transfer: SMB 3 signs or
  // encrypts a whole message, the signature (or the transform header) goes before the data, so
  // the server has to finish a READ response's crypto before its first byte leaves and the
  // client needs its last byte before it can check it. A client with few, large reads
  // outstanding (smbclient: 2 x 8 MiB) then adds both ends' crypto time per byte to the wire
  // time per byte instead of hiding it behind the transfer (docs/cost-model.md, "Validation
  // across a link"). True for smbclient (measured through the delay link); false for the
  // Windows client (not measured here: it keeps many 1 MiB reads outstanding).
  bool smbclient_crypto_in_series = false;
  bool CryptoInSeries(ClientKind client) const;
  // Page faults per page of payload that Samba's smbd (server) and smbclient (client) take on
  // large READs: each reads a message into memory its allocator has just obtained from the
  // kernel, and the CCM ciphers copy it once more. Multiplied by the host's measured cost of a
  // fault (HostProfile::page_fault_seconds); hosts other than Samba take none (the Windows
  // server works in the kernel), and the client's only when it runs on the host.
  double samba_server_faults_per_page = 0;
  double samba_server_ccm_faults_per_page = 0;
  double smbclient_faults_per_page = 0;
  double smbclient_ccm_faults_per_page = 0;
  // Payload share of the line rate (Ethernet/IP/TCP/NetBIOS/SMB2 headers).
  double link_efficiency = 0;
  // Defaults when the host does not say.
  double default_link_bits_per_second = 1e9;
  double default_lan_rtt_seconds = 0.00025;
  double default_wan_rtt_seconds = 0.030;
  uint32_t default_logical_cores = 4;
  // Crypto costs for algorithms the host did not benchmark (this project's reference host).
  std::map<CryptoAlgorithm, CryptoCost> default_crypto;
  // Compression figures per corpus for hosts without a compression benchmark (reference host).
  std::map<std::string, CompressionCost> default_compression;
  // Bytes the SMB2 COMPRESSION_TRANSFORM_HEADER adds to a compressed message (MS-SMB2 2.2.42.1,
  // unchained).
  double compression_header_bytes = 16;
};

// The calibrated parameters the product uses.
const ModelParameters& DefaultParameters();

// The host's compression figures for `corpus`, else the reference host's (measured = false);
// ratio 0 when neither knows the corpus.
CompressionCost CompressionCostFor(const HostProfile& host, absl::string_view corpus,
                                   const ModelParameters& parameters);

// The figures for data that compresses `ratio` to 1: those of the corpus whose ratio is nearest
// (speed depends on how much repeats), with `ratio` in place of the corpus's own. Ratio 0 when
// neither the host nor the reference host has a corpus.
CompressionCost CompressionCostForRatio(const HostProfile& host, double ratio,
                                        const ModelParameters& parameters);

// CPU seconds per payload byte of a large read's page faults at `level`: on the server
// (client_side false; Samba only) or in smbclient (client_side true; only when the client runs
// on the host). 0 when the host's fault cost is not measured.
double FaultSecondsPerByte(const HostProfile& host, const ProtectionLevel& level, bool client_side,
                           const ModelParameters& parameters = DefaultParameters());

// ---------------------------------------------------------------------------------------------
// Predictions.

struct Prediction {
  enum class Limit { kLink, kLatency, kCpu };

  double throughput_bytes_per_second = 0;  // payload bytes delivered per second
  double files_per_second = 0;             // small-file workloads; 0 otherwise
  // Server CPU at that throughput as a fraction of all its logical cores (0..1).
  double cpu_fraction = 0;
  // CPU seconds per payload byte on the server (and the client, when it is on the host).
  double server_cpu_seconds_per_byte = 0;
  double client_cpu_seconds_per_byte = 0;
  Limit limit = Limit::kLink;
};

// "link", "latency", "cpu": what set a prediction's pace, as reports and tools print it.
const char* LimitName(Prediction::Limit limit);

Prediction Predict(const HostProfile& host, const ProtectionLevel& level, const Workload& workload,
                   const ModelParameters& parameters = DefaultParameters());
// With compression: the sender (server on reads, client on writes) compresses, the receiver
// decompresses; protection then runs over the compressed bytes.
Prediction Predict(const HostProfile& host, const ProtectionLevel& level,
                   const CompressionLevel& compression, const Workload& workload,
                   const ModelParameters& parameters = DefaultParameters());

// One workload's change from `before` to `after`.
struct WorkloadCost {
  Workload workload;
  Prediction before;
  Prediction after;
  double throughput_change_percent = 0;  // (after - before) / before x 100
  double cpu_change_points = 0;          // (after - before) cpu_fraction x 100
};

struct ChangeCost {
  ProtectionLevel before;
  ProtectionLevel after;
  CompressionLevel compression_before;
  CompressionLevel compression_after;
  HostProfile host;
  std::vector<WorkloadCost> workloads;  // large sequential, then small files
  // "enabling encryption AES-128-GCM on fs01: ~-9% throughput on large files, ~+12% CPU at
  // 1 Gbit; small files ~-60%"
  std::string summary;
};

ChangeCost EstimateChangeCost(const ::smbfleet::v1::Posture& posture, const ProtectionLevel& before,
                              const ProtectionLevel& after);
ChangeCost EstimateChangeCost(const HostProfile& host, const ProtectionLevel& before,
                              const ProtectionLevel& after,
                              const ModelParameters& parameters = DefaultParameters());
// A change of protection and/or compression: "enabling compression XPRESS Huffman (ratio 2.4,
// vm-disk benchmark) on fs01: ~+45% throughput on large files, ~+9.5% CPU at 1 Gbit; small
// files ~+3%".
ChangeCost EstimateChangeCost(const HostProfile& host, const ProtectionLevel& before,
                              const CompressionLevel& compression_before,
                              const ProtectionLevel& after,
                              const CompressionLevel& compression_after,
                              const ModelParameters& parameters = DefaultParameters());

}  // namespace smbfleet::policy::cost

#endif  // SMBFLEET_POLICY_COST_COST_MODEL_H_
