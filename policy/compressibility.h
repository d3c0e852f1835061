#ifndef SMBFLEET_POLICY_COMPRESSIBILITY_H_
#define SMBFLEET_POLICY_COMPRESSIBILITY_H_

// How well a share's (or a host's) data compresses, from what the posture knows, best first:
//   1. the share's own sample (Share.compressibility, optional sampling on the host);
//   2. the host's compression benchmark (XPRESS Huffman, else LZ4) on the corpus that fits:
//      the host label `data` (a corpus name: text, vm-disk, compressed) when set, else the
//      share's classification (backup -> vm-disk: VM and system image backups);
//   3. unknown (ratio 0): nothing is guessed.

#include <string>

#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::policy {

struct Compressibility {
  double ratio = 0;    // input bytes / compressed bytes; 0 = unknown
  std::string corpus;  // the benchmark corpus it comes from; empty for a share sample
  // For plans and evidence: "sampled: 64 MiB of 120 files", "vm-disk benchmark (backup
  // share)", "text benchmark (label data)", or why it is unknown.
  std::string source;
};

// The benchmark corpus a classification's data resembles; empty when none does.
absl::string_view CorpusForClassification(absl::string_view classification);

// `classification` is the share's class (Share.classification or the evaluation's).
Compressibility ShareCompressibility(const smbfleet::v1::Posture& posture,
                                     const smbfleet::v1::Share& share,
                                     absl::string_view classification);

// The host's data as a whole (server-wide compression): the label `data` corpus; else the mean
// ratio of its non-special shares whose compressibility is known; else unknown.
Compressibility HostCompressibility(const smbfleet::v1::Posture& posture);

}  // namespace smbfleet::policy

#endif  // SMBFLEET_POLICY_COMPRESSIBILITY_H_
