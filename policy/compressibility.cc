#include "policy/compressibility.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace smbfleet::policy {
namespace {

namespace v1 = ::smbfleet::v1;

// The benchmark's ratio for `corpus`: the one-thread XPRESS Huffman row with the largest input,
// else the LZ4 one (the cost model's choice, FitCompressionCosts); 0 when there is none.
double BenchmarkRatio(const v1::Posture& p, absl::string_view corpus) {
  double ratio = 0;
  uint64_t input = 0;
  bool xpress = false;
  for (const v1::CompressionBenchmark& b : p.compression_benchmarks()) {
    bool is_xpress = b.algorithm() == v1::COMPRESSION_LZ77_HUFFMAN;
    if (b.corpus() != corpus || b.threads() > 1 || !(b.ratio() > 0) || !std::isfinite(b.ratio()) ||
        (!is_xpress && b.algorithm() != v1::COMPRESSION_LZ4) || (xpress && !is_xpress)) {
      continue;
    }
    if (is_xpress != xpress || b.input_bytes() > input) {
      ratio = b.ratio();
      input = b.input_bytes();
      xpress = is_xpress;
    }
  }
  return ratio;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= (1u << 20)) {
    return absl::StrFormat("%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  }
  return absl::StrFormat("%.0f KiB", static_cast<double>(bytes) / (1 << 10));
}

Compressibility FromBenchmark(const v1::Posture& p, absl::string_view corpus,
                              absl::string_view why) {
  Compressibility out;
  out.corpus = std::string(corpus);
  out.ratio = BenchmarkRatio(p, corpus);
  out.source = out.ratio > 0
                   ? absl::StrCat(corpus, " benchmark (", why, ")")
                   : absl::StrCat("unknown: ", why, " but no ", corpus, " compression benchmark");
  return out;
}

}  // namespace

absl::string_view CorpusForClassification(absl::string_view classification) {
  return absl::EqualsIgnoreCase(classification, "backup") ? "vm-disk" : "";
}

Compressibility ShareCompressibility(const v1::Posture& posture, const v1::Share& share,
                                     absl::string_view classification) {
  const v1::CompressibilitySample& sample = share.compressibility();
  if (sample.ratio() > 0 && std::isfinite(sample.ratio())) {
    Compressibility out;
    out.ratio = sample.ratio();
    out.source = absl::StrCat("sampled: ", FormatBytes(sample.bytes_sampled()), " of ",
                              sample.files_sampled(), " files");
    return out;
  }
  const auto& labels = posture.host().labels();
  if (auto it = labels.find("data"); it != labels.end()) {
    return FromBenchmark(posture, absl::AsciiStrToLower(absl::StripAsciiWhitespace(it->second)),
                         "label data");
  }
  absl::string_view corpus = CorpusForClassification(classification);
  if (!corpus.empty()) {
    return FromBenchmark(posture, corpus, absl::StrCat(classification, " share"));
  }
  Compressibility out;
  out.source = sample.not_sampled_reason().empty()
                   ? "unknown: not sampled"
                   : absl::StrCat("unknown: not sampled (", sample.not_sampled_reason(), ")");
  return out;
}

Compressibility HostCompressibility(const v1::Posture& posture) {
  const auto& labels = posture.host().labels();
  if (auto it = labels.find("data"); it != labels.end()) {
    return FromBenchmark(posture, absl::AsciiStrToLower(absl::StripAsciiWhitespace(it->second)),
                         "label data");
  }
  double sum = 0;
  int known = 0;
  for (const v1::Share& s : posture.shares()) {
    if (s.special() || absl::EndsWith(s.name(), "$")) {
      continue;
    }
    Compressibility c = ShareCompressibility(posture, s, s.classification());
    if (c.ratio > 0) {
      sum += c.ratio;
      ++known;
    }
  }
  Compressibility out;
  if (known == 0) {
    out.source = "unknown: no share sampled or classified";
    return out;
  }
  out.ratio = sum / known;
  out.source = absl::StrCat("mean of ", known, known == 1 ? " share" : " shares");
  return out;
}

}  // namespace smbfleet::policy
