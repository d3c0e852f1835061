#include "agent/bench/compression_bench.h"

#ifdef _WIN32
#include <windows.h>
// windows.h first: compressapi.h needs its types.
#include <compressapi.h>
#else
#include <dlfcn.h>
#include <lz4.h>
// Declarations only: the library is loaded with dlopen (XpressCodec).
#include <wimlib.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/bench/thread_priority.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::agent::bench {
namespace {

using ::smbfleet::v1::CompressionAlgorithm;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kBlockBytes = 4096;  // the cluster size of NTFS and of VHDX sectors' pages

// SplitMix64: tiny, fast and the same everywhere (std:: distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // 0..n-1; the modulo bias is irrelevant for a corpus.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  // 0..n-1, low values far more often (the smaller of two draws): the skew of real vocabularies.
  size_t Skewed(size_t n) { return std::min(Below(n), Below(n)); }

 private:
  uint64_t state_;
};

void AppendRandom(Rng& rng, size_t bytes, std::string* out) {
  while (bytes > 0) {
    uint64_t v = rng.Next();
    size_t n = std::min(bytes, sizeof(v));
    out->append(reinterpret_cast<const char*>(&v), n);
    bytes -= n;
  }
}

// Log lines with the structure and repetition of a file server's and its applications' logs.
void AppendText(Rng& rng, size_t bytes, std::string* out) {
  static constexpr std::array<const char*, 5> kLevels = {"INFO", "DEBUG", "WARN", "INFO", "ERROR"};
  static constexpr std::array<const char*, 8> kComponents = {
      "smbd.auth", "smbd.tree", "backup.job", "sql.agent",
      "iis.w3svc", "dfsr.repl", "av.scanner", "task.scheduler"};
  static constexpr std::array<const char*, 12> kUsers = {
      "jdoe",    "asmith", "svc_backup", "mbrown", "svc_sql", "kwilson",
      "lgarcia", "pchen",  "svc_web",    "rpatel", "tnguyen", "administrator"};
  static constexpr std::array<const char*, 8> kShares = {"projects", "home", "finance", "scans",
                                                         "backup",   "it",   "hr",      "public"};
  static constexpr std::array<const char*, 10> kExtensions = {
      ".docx", ".xlsx", ".pdf", ".log", ".vhdx", ".txt", ".csv", ".bak", ".jpg", ".zip"};
  uint64_t ms = 1'700'000'000'000ull + rng.Below(1'000'000);
  const size_t end = out->size() + bytes;
  while (out->size() < end) {
    ms += rng.Below(2000);
    const uint64_t s = ms / 1000;
    std::string line = absl::StrFormat(
        "2026-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s [%s] ", 1 + (s / 2'592'000) % 12,
        1 + (s / 86'400) % 28, (s / 3600) % 24, (s / 60) % 60, s % 60, ms % 1000,
        kLevels[rng.Skewed(kLevels.size())], kComponents[rng.Skewed(kComponents.size())]);
    const char* user = kUsers[rng.Skewed(kUsers.size())];
    const char* share = kShares[rng.Skewed(kShares.size())];
    switch (rng.Skewed(6)) {
      case 0:
        absl::StrAppendFormat(&line,
                              "session 0x%06x user=CORP\\%s from 10.%d.%d.%d: tree connect to "
                              "\\\\fs01\\%s ok (%d ms)\n",
                              rng.Below(1 << 24), user, rng.Below(4), rng.Below(32),
                              rng.Below(254) + 1, share, rng.Below(40));
        break;
      case 1:
        absl::StrAppendFormat(&line, "open \\%s\\%s\\report-%04d%s for read by %s: %d bytes\n",
                              share, user, rng.Below(3000), kExtensions[rng.Skewed(10)], user,
                              rng.Below(5'000'000));
        break;
      case 2:
        absl::StrAppendFormat(
            &line, "job %s-%d: copied %d files, %d MB, %d skipped, elapsed %d s\n", share,
            rng.Below(100), rng.Below(20000), rng.Below(90000), rng.Below(20), rng.Below(7200));
        break;
      case 3:
        absl::StrAppendFormat(&line,
                              "GET /api/v1/%s/items/%d HTTP/1.1 200 %d \"Mozilla/5.0 (Windows "
                              "NT 10.0; Win64; x64)\" %d ms\n",
                              share, rng.Below(100000), rng.Below(65536), rng.Below(900));
        break;
      case 4:
        absl::StrAppendFormat(&line,
                              "replication of folder %s from FS%02d: %d changes, backlog %d, "
                              "state=InSync\n",
                              share, rng.Below(12), rng.Below(500), rng.Below(50));
        break;
      default:
        absl::StrAppendFormat(&line,
                              "access denied for CORP\\%s on \\%s\\%s: 0xC0000022 "
                              "STATUS_ACCESS_DENIED (attempt %d)\n",
                              user, share, kShares[rng.Below(kShares.size())], rng.Below(5) + 1);
        break;
    }
    out->append(line, 0, std::min(line.size(), end - out->size()));
  }
}

void AppendLittleEndian(uint64_t v, size_t bytes, std::string* out) {
  for (size_t i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// x86-64 code, pointer tables and UTF-16 resource strings, as in executables and DLLs.
void AppendExecutable(Rng& rng, size_t bytes, std::string* out) {
  // Instruction openings by frequency; `operand` bytes follow each: rel32/disp32 operands are
  // small signed numbers (two high bytes 00 or ff), disp8 a byte.
  struct Op {
    std::array<uint8_t, 4> code;
    size_t code_bytes;
    size_t operand;  // 0, 1 (disp8) or 4 (rel32)
  };
  static constexpr std::array<Op, 20> kOps = {{
      {{0x48, 0x8b, 0x45, 0}, 3, 1}, {{0x48, 0x89, 0x44, 0x24}, 4, 1},
      {{0xe8, 0, 0, 0}, 1, 4},       {{0x48, 0x8b, 0x05, 0}, 3, 4},
      {{0x48, 0x85, 0xc0, 0}, 3, 0}, {{0x74, 0, 0, 0}, 1, 1},
      {{0x0f, 0x84, 0, 0}, 2, 4},    {{0x48, 0x8d, 0x0d, 0}, 3, 4},
      {{0x33, 0xc0, 0, 0}, 2, 0},    {{0x89, 0x44, 0x24, 0}, 3, 1},
      {{0x8b, 0x4c, 0x24, 0}, 3, 1}, {{0xff, 0x15, 0, 0}, 2, 4},
      {{0x75, 0, 0, 0}, 1, 1},       {{0x48, 0x83, 0xec, 0}, 3, 1},
      {{0x48, 0x83, 0xc4, 0}, 3, 1}, {{0xc3, 0, 0, 0}, 1, 0},
      {{0x41, 0xb8, 0, 0}, 2, 4},    {{0x0f, 0x1f, 0x44, 0}, 3, 2},
      {{0x4c, 0x8b, 0xc3, 0}, 3, 0}, {{0xcc, 0xcc, 0xcc, 0xcc}, 4, 0},
  }};
  static constexpr char kStrings[][24] = {"Microsoft Corporation", "FileDescription",
                                          "ProductVersion",        "Access is denied.",
                                          "The operation failed.", "CompanyName"};
  const size_t end = out->size() + bytes;
  while (out->size() < end) {
    const size_t kind = rng.Below(20);
    if (kind < 14) {  // code, 70%
      for (int i = 0; i < 64; ++i) {
        const Op& op = kOps[rng.Skewed(kOps.size())];
        out->append(reinterpret_cast<const char*>(op.code.data()), op.code_bytes);
        if (op.operand == 4) {
          const auto rel = static_cast<int32_t>(rng.Below(65536)) - 32768;
          AppendLittleEndian(static_cast<uint32_t>(rel), 4, out);
        } else if (op.operand > 0) {
          AppendLittleEndian(rng.Below(256), op.operand, out);
        }
      }
    } else if (kind < 17) {  // pointer tables (import/relocation/vtables), 15%
      uint64_t pointer = 0x00007ff600000000ull + (rng.Below(1 << 20) << 4);
      for (int i = 0; i < 32; ++i) {
        pointer += 8 + 8 * rng.Below(64);
        AppendLittleEndian(pointer, 8, out);
      }
    } else {  // UTF-16 resource strings, 15%
      for (int i = 0; i < 8; ++i) {
        for (const char* c = kStrings[rng.Skewed(std::size(kStrings))]; *c != '\0'; ++c) {
          out->push_back(*c);
          out->push_back('\0');
        }
        AppendLittleEndian(0, 2, out);
      }
    }
  }
  out->resize(end);
}

// The block mix holds at every size, not only on average: each kind gets its share of the
// blocks (the last partial block goes to random data), laid out in extents of 1 to 16 blocks
// whose kind is drawn in proportion to the blocks each kind has left.
void AppendVmDisk(Rng& rng, size_t bytes, std::string* out) {
  enum Kind { kZero, kText, kExecutable, kRandom, kKinds };
  constexpr std::array<size_t, kKinds> kPercent = {25, 10, 30, 35};
  const size_t blocks = bytes / kBlockBytes;
  std::array<size_t, kKinds> left{};
  size_t assigned = 0;
  for (size_t k = 0; k < kRandom; ++k) {
    left[k] = blocks * kPercent[k] / 100;
    assigned += left[k];
  }
  left[kRandom] = blocks - assigned;
  size_t total = blocks;
  while (total > 0) {
    size_t draw = rng.Below(total);
    size_t kind = 0;
    while (draw >= left[kind]) draw -= left[kind++];
    const size_t extent = std::min(1 + rng.Below(16), left[kind]);
    left[kind] -= extent;
    total -= extent;
    const size_t extent_bytes = extent * kBlockBytes;
    switch (kind) {
      case kZero:
        out->append(extent_bytes, '\0');
        break;
      case kText:
        AppendText(rng, extent_bytes, out);
        break;
      case kExecutable:
        AppendExecutable(rng, extent_bytes, out);
        break;
      default:
        AppendRandom(rng, extent_bytes, out);
        break;
    }
  }
  AppendRandom(rng, bytes % kBlockBytes, out);
}

// One algorithm, one chunk size: Compress returns 0 when the chunk does not get smaller.
class Codec {
 public:
  virtual ~Codec() = default;
  virtual size_t Compress(const char* in, size_t in_bytes, char* out, size_t out_capacity) = 0;
  virtual bool Decompress(const char* in, size_t in_bytes, char* out, size_t out_bytes) = 0;
};

#ifdef _WIN32
// Wine's ntdll exports wine_get_version. Its cabinet.dll has CreateCompressor as a stub that
// aborts the process when called (Wine 8), so under Wine the codec is refused before the call.
bool RunningUnderWine() {
  HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  return ntdll != nullptr && ::GetProcAddress(ntdll, "wine_get_version") != nullptr;
}

// XPRESS Huffman through the OS's Compression API (cabinet.dll), raw: no header of its own, as
// SMB sends it.
class XpressCodec : public Codec {
 public:
  static absl::StatusOr<std::unique_ptr<Codec>> Create(size_t chunk_bytes) {
    if (RunningUnderWine()) {
      return absl::UnavailableError(
          "COMPRESSION_LZ77_HUFFMAN: the Compression API (cabinet.dll CreateCompressor) is not "
          "implemented under Wine");
    }
    auto codec = std::make_unique<XpressCodec>();
    if (!::CreateCompressor(COMPRESS_ALGORITHM_XPRESS_HUFF | COMPRESS_RAW, nullptr,
                            &codec->compressor_)) {
      return absl::UnavailableError(absl::StrCat(
          "CreateCompressor(COMPRESS_ALGORITHM_XPRESS_HUFF): Windows error ", ::GetLastError()));
    }
    if (!::CreateDecompressor(COMPRESS_ALGORITHM_XPRESS_HUFF | COMPRESS_RAW, nullptr,
                              &codec->decompressor_)) {
      return absl::UnavailableError(absl::StrCat(
          "CreateDecompressor(COMPRESS_ALGORITHM_XPRESS_HUFF): Windows error ", ::GetLastError()));
    }
    return codec;
  }
  ~XpressCodec() override {
    if (compressor_ != nullptr) ::CloseCompressor(compressor_);
    if (decompressor_ != nullptr) ::CloseDecompressor(decompressor_);
  }
  size_t Compress(const char* in, size_t in_bytes, char* out, size_t out_capacity) override {
    SIZE_T n = 0;
    // Fails with ERROR_INSUFFICIENT_BUFFER when the chunk does not get smaller: stored.
    // const_cast: mingw-w64 declares the input PVOID; the API only reads it (LPCVOID in the SDK).
    if (!::Compress(compressor_, const_cast<char*>(in), in_bytes, out, out_capacity, &n)) return 0;
    return n;
  }
  bool Decompress(const char* in, size_t in_bytes, char* out, size_t out_bytes) override {
    SIZE_T n = 0;
    return ::Decompress(decompressor_, const_cast<char*>(in), in_bytes, out, out_bytes, &n) &&
           n == out_bytes;
  }

 private:
  COMPRESSOR_HANDLE compressor_ = nullptr;
  DECOMPRESSOR_HANDLE decompressor_ = nullptr;
};

absl::StatusOr<std::unique_ptr<Codec>> MakeCodec(CompressionAlgorithm algorithm,
                                                 size_t chunk_bytes) {
  switch (algorithm) {
    case smbfleet::v1::COMPRESSION_LZ77_HUFFMAN:
      return XpressCodec::Create(chunk_bytes);
    case smbfleet::v1::COMPRESSION_LZ4:
      return absl::UnimplementedError(
          "COMPRESSION_LZ4 is not available in this build (the Windows agent has no LZ4 library)");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("compression algorithm ", smbfleet::v1::CompressionAlgorithm_Name(algorithm),
                       " is not benchmarked (want COMPRESSION_LZ77_HUFFMAN)"));
  }
}
#else
// wimlib is loaded for the benchmark only (it runs once a day by default) and unloaded after:
// linked in, it and what it needs (libxml2, ICU, ntfs-3g, FUSE) stayed mapped and resident in
// the agent all the time for nothing (docs/scaling.md "The agent").
class Wimlib {
 public:
  static absl::StatusOr<std::unique_ptr<Wimlib>> Load() {
    auto lib = std::make_unique<Wimlib>();
    lib->handle_ = dlopen(SMBFLEET_WIMLIB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("XPRESS compression: ", dlerror()));
    }
    RETURN_IF_ERROR(lib->Bind("wimlib_create_compressor", &lib->create_compressor));
    RETURN_IF_ERROR(lib->Bind("wimlib_create_decompressor", &lib->create_decompressor));
    RETURN_IF_ERROR(lib->Bind("wimlib_free_compressor", &lib->free_compressor));
    RETURN_IF_ERROR(lib->Bind("wimlib_free_decompressor", &lib->free_decompressor));
    RETURN_IF_ERROR(lib->Bind("wimlib_compress", &lib->compress));
    RETURN_IF_ERROR(lib->Bind("wimlib_decompress", &lib->decompress));
    return lib;
  }
  Wimlib() = default;
  Wimlib(const Wimlib&) = delete;
  Wimlib& operator=(const Wimlib&) = delete;
  ~Wimlib() {
    if (handle_ != nullptr) dlclose(handle_);
  }

  decltype(&wimlib_create_compressor) create_compressor = nullptr;
  decltype(&wimlib_create_decompressor) create_decompressor = nullptr;
  decltype(&wimlib_free_compressor) free_compressor = nullptr;
  decltype(&wimlib_free_decompressor) free_decompressor = nullptr;
  decltype(&wimlib_compress) compress = nullptr;
  decltype(&wimlib_decompress) decompress = nullptr;

 private:
  template <typename F>
  absl::Status Bind(const char* name, F* f) {
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("XPRESS compression: ", SMBFLEET_WIMLIB_SONAME, " has no ", name));
    }
    *f = reinterpret_cast<F>(symbol);
    return absl::OkStatus();
  }

  void* handle_ = nullptr;
};

class XpressCodec : public Codec {
 public:
  static absl::StatusOr<std::unique_ptr<Codec>> Create(size_t chunk_bytes) {
    auto codec = std::make_unique<XpressCodec>();
    ASSIGN_OR_RETURN(codec->wimlib_, Wimlib::Load());
    if (int e = codec->wimlib_->create_compressor(WIMLIB_COMPRESSION_TYPE_XPRESS, chunk_bytes, 0,
                                                  &codec->compressor_);
        e != 0) {
      return absl::InternalError(
          absl::StrCat("wimlib_create_compressor(XPRESS, ", chunk_bytes, "): error ", e));
    }
    if (int e = codec->wimlib_->create_decompressor(WIMLIB_COMPRESSION_TYPE_XPRESS, chunk_bytes,
                                                    &codec->decompressor_);
        e != 0) {
      return absl::InternalError(
          absl::StrCat("wimlib_create_decompressor(XPRESS, ", chunk_bytes, "): error ", e));
    }
    return codec;
  }
  ~XpressCodec() override {
    if (wimlib_ == nullptr) return;
    if (compressor_ != nullptr) wimlib_->free_compressor(compressor_);
    if (decompressor_ != nullptr) wimlib_->free_decompressor(decompressor_);
  }
  size_t Compress(const char* in, size_t in_bytes, char* out, size_t out_capacity) override {
    return wimlib_->compress(in, in_bytes, out, out_capacity, compressor_);
  }
  bool Decompress(const char* in, size_t in_bytes, char* out, size_t out_bytes) override {
    return wimlib_->decompress(in, in_bytes, out, out_bytes, decompressor_) == 0;
  }

 private:
  std::unique_ptr<Wimlib> wimlib_;
  wimlib_compressor* compressor_ = nullptr;
  wimlib_decompressor* decompressor_ = nullptr;
};

class Lz4Codec : public Codec {
 public:
  size_t Compress(const char* in, size_t in_bytes, char* out, size_t out_capacity) override {
    const int n =
        LZ4_compress_default(in, out, static_cast<int>(in_bytes), static_cast<int>(out_capacity));
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
  bool Decompress(const char* in, size_t in_bytes, char* out, size_t out_bytes) override {
    return LZ4_decompress_safe(in, out, static_cast<int>(in_bytes), static_cast<int>(out_bytes)) ==
           static_cast<int>(out_bytes);
  }
};

absl::StatusOr<std::unique_ptr<Codec>> MakeCodec(CompressionAlgorithm algorithm,
                                                 size_t chunk_bytes) {
  switch (algorithm) {
    case smbfleet::v1::COMPRESSION_LZ77_HUFFMAN:
      return XpressCodec::Create(chunk_bytes);
    case smbfleet::v1::COMPRESSION_LZ4:
      return std::unique_ptr<Codec>(std::make_unique<Lz4Codec>());
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("compression algorithm ", smbfleet::v1::CompressionAlgorithm_Name(algorithm),
                       " is not benchmarked (want COMPRESSION_LZ77_HUFFMAN or COMPRESSION_LZ4)"));
  }
}

#endif

absl::Status CheckInputBytes(absl::string_view what, size_t bytes) {
  if (bytes == 0 || bytes > kMaxCorpusBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes, " bytes, want 1..", kMaxCorpusBytes));
  }
  return absl::OkStatus();
}

absl::Status CheckChunkBytes(absl::string_view what, size_t bytes) {
  if (bytes == 0 || bytes > kMaxCompressionChunkBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes, " bytes, want 1..", kMaxCompressionChunkBytes));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> CorpusKinds() { return {"text", "vm-disk", "compressed"}; }

std::vector<CompressionAlgorithm> CompressionAlgorithms() {
#ifdef _WIN32
  return {smbfleet::v1::COMPRESSION_LZ77_HUFFMAN};
#else
  return {smbfleet::v1::COMPRESSION_LZ77_HUFFMAN, smbfleet::v1::COMPRESSION_LZ4};
#endif
}

absl::StatusOr<std::string> MakeCorpus(absl::string_view kind, size_t bytes, uint64_t seed) {
  RETURN_IF_ERROR(CheckInputBytes(absl::StrCat("corpus ", kind), bytes));
  Rng rng(seed);
  std::string out;
  out.reserve(bytes);
  if (kind == "text") {
    AppendText(rng, bytes, &out);
  } else if (kind == "vm-disk") {
    AppendVmDisk(rng, bytes, &out);
  } else if (kind == "compressed") {
    AppendRandom(rng, bytes, &out);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("corpus '", kind, "': unknown, want one of ",
                                                   absl::StrJoin(CorpusKinds(), ", ")));
  }
  return out;
}

absl::StatusOr<CompressionResult> MeasureCompression(CompressionAlgorithm algorithm,
                                                     absl::string_view input,
                                                     const CompressionMeasureOptions& options) {
  RETURN_IF_ERROR(CheckInputBytes("compression input", input.size()));
  RETURN_IF_ERROR(CheckChunkBytes("compression chunk_bytes", options.chunk_bytes));
  ASSIGN_OR_RETURN(std::unique_ptr<Codec> codec, MakeCodec(algorithm, options.chunk_bytes));
  const size_t chunk = options.chunk_bytes;
  const size_t chunks = (input.size() + chunk - 1) / chunk;
  // Each chunk's compressed form; its size 0 = stored (did not get smaller).
  std::vector<std::string> compressed(chunks, std::string(chunk, '\0'));
  std::vector<size_t> sizes(chunks, 0);
  auto chunk_of = [&](size_t i) { return input.substr(i * chunk, chunk); };

  CompressionResult result;
  result.input_bytes = input.size();
  result.chunks = chunks;
  uint64_t passes = 0;
  const SteadyClock::time_point compress_until = SteadyClock::now() + options.min_time;
  double cpu_start = ThreadCpuSeconds();
  do {
    for (size_t i = 0; i < chunks; ++i) {
      absl::string_view in = chunk_of(i);
      // Capacity one byte short of the chunk: a result that is not smaller does not fit.
      sizes[i] = codec->Compress(in.data(), in.size(), compressed[i].data(), in.size() - 1);
    }
    ++passes;
  } while (options.decompress && SteadyClock::now() < compress_until);
  const double compress_cpu = std::max(ThreadCpuSeconds() - cpu_start, 1e-9);
  for (size_t i = 0; i < chunks; ++i) {
    if (sizes[i] == 0) {
      ++result.stored_chunks;
      result.compressed_bytes += chunk_of(i).size();
    } else {
      result.compressed_bytes += sizes[i];
    }
  }
  result.ratio =
      static_cast<double>(result.input_bytes) / static_cast<double>(result.compressed_bytes);
  if (!options.decompress) return result;
  result.compress_bytes_per_second =
      static_cast<double>(passes * result.input_bytes) / compress_cpu;

  std::string out(chunk, '\0');
  // Untimed: every chunk must come back as it was.
  for (size_t i = 0; i < chunks; ++i) {
    if (sizes[i] == 0) continue;
    absl::string_view in = chunk_of(i);
    if (!codec->Decompress(compressed[i].data(), sizes[i], out.data(), in.size()) ||
        absl::string_view(out.data(), in.size()) != in) {
      return absl::InternalError(absl::StrCat(smbfleet::v1::CompressionAlgorithm_Name(algorithm),
                                              ": chunk ", i, " does not decompress to its input"));
    }
  }
  passes = 0;
  const SteadyClock::time_point decompress_until = SteadyClock::now() + options.min_time;
  cpu_start = ThreadCpuSeconds();
  do {
    for (size_t i = 0; i < chunks; ++i) {
      absl::string_view in = chunk_of(i);
      if (sizes[i] == 0) {
        // A stored chunk costs the receiver a copy, not nothing: a rate stays a rate.
        std::memcpy(out.data(), in.data(), in.size());
        continue;
      }
      codec->Decompress(compressed[i].data(), sizes[i], out.data(), in.size());
    }
    ++passes;
  } while (SteadyClock::now() < decompress_until);
  result.decompress_bytes_per_second = static_cast<double>(passes * result.input_bytes) /
                                       std::max(ThreadCpuSeconds() - cpu_start, 1e-9);
  return result;
}

absl::StatusOr<std::vector<smbfleet::v1::CompressionBenchmark>> RunCompressionBenchmark(
    const CompressionBenchOptions& options) {
  RETURN_IF_ERROR(CheckInputBytes("compression bench corpus_bytes", options.corpus_bytes));
  RETURN_IF_ERROR(CheckChunkBytes("compression bench chunk_bytes", options.chunk_bytes));
  if (options.budget < std::chrono::milliseconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression bench budget: ", options.budget.count(), " ms, want at least 10 ms"));
  }
  const std::vector<std::string> corpora =
      options.corpora.empty() ? CorpusKinds() : options.corpora;
  const std::vector<std::string> known = CorpusKinds();
  for (const std::string& corpus : corpora) {
    if (std::find(known.begin(), known.end(), corpus) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat("compression bench corpora: '", corpus,
                                                     "' is unknown, want one of ",
                                                     absl::StrJoin(known, ", ")));
    }
  }
  const std::vector<CompressionAlgorithm> algorithms =
      options.algorithms.empty() ? CompressionAlgorithms() : options.algorithms;
  for (CompressionAlgorithm algorithm : algorithms) {
    RETURN_IF_ERROR(MakeCodec(algorithm, options.chunk_bytes).status());
  }

  const size_t cells = corpora.size() * algorithms.size();
  const auto slice = std::chrono::duration_cast<std::chrono::milliseconds>(
      options.budget / static_cast<int64_t>(2 * cells));
  std::vector<smbfleet::v1::CompressionBenchmark> rows;
  absl::Status status;
  std::thread worker([&] {
    if (options.lowest_priority) {
      // A refusal still leaves the benchmark correct, only less polite; nothing to report to.
      (void)LowerCurrentThreadPriority();
    }
    // All corpora first (a few ms each), so that the budget is the measurement's.
    std::vector<std::string> inputs;
    for (const std::string& kind : corpora) {
      absl::StatusOr<std::string> corpus = MakeCorpus(kind, options.corpus_bytes, options.seed);
      if (!corpus.ok()) {
        status = corpus.status();
        return;
      }
      inputs.push_back(*std::move(corpus));
    }
    const SteadyClock::time_point give_up = SteadyClock::now() + 2 * options.budget;
    for (size_t c = 0; c < corpora.size(); ++c) {
      for (CompressionAlgorithm algorithm : algorithms) {
        if (SteadyClock::now() >= give_up) return;  // the rest left out
        CompressionMeasureOptions measure;
        measure.chunk_bytes = options.chunk_bytes;
        measure.min_time = slice;
        absl::StatusOr<CompressionResult> r = MeasureCompression(algorithm, inputs[c], measure);
        if (!r.ok()) {
          status = r.status();
          return;
        }
        smbfleet::v1::CompressionBenchmark& row = rows.emplace_back();
        row.set_algorithm(algorithm);
        row.set_corpus(corpora[c]);
        row.set_input_bytes(r->input_bytes);
        row.set_compress_bytes_per_second(r->compress_bytes_per_second);
        row.set_decompress_bytes_per_second(r->decompress_bytes_per_second);
        row.set_ratio(r->ratio);
        row.set_threads(1);
      }
    }
  });
  worker.join();
  RETURN_IF_ERROR(status);
  if (rows.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("compression benchmark: no cell got CPU time within twice the ",
                     options.budget.count(), " ms budget (host busy)"));
  }
  const google::protobuf::Timestamp now = google::protobuf::util::TimeUtil::GetCurrentTime();
  for (auto& row : rows) *row.mutable_measured_at() = now;
  return rows;
}

}  // namespace smbfleet::agent::bench
