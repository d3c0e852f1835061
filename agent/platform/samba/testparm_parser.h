#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_TESTPARM_PARSER_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_TESTPARM_PARSER_H_

// `testparm -s -v SMB_CONF` output: the effective configuration with Samba's normalised values.
// With -v, [global] lists every parameter including defaults (and the defaults of share-level
// parameters); share sections list only what differs, so a share's effective value is its own
// or [global]'s.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::samba {

struct TestparmSection {
  std::string name;                          // as testparm prints it, e.g. "finance"
  std::map<std::string, std::string> params;  // lower-case parameter name -> value
};

class TestparmConfig {
 public:
  // Fails (naming the line) on a line that is neither a section header, a parameter, a comment
  // nor blank, on a parameter before the first section, and on input over 16 MiB.
  static absl::StatusOr<TestparmConfig> Parse(absl::string_view text);

  const std::map<std::string, std::string>& global() const { return global_; }
  const std::vector<TestparmSection>& shares() const { return shares_; }

  // A [global] value; nullopt when testparm did not print it.
  std::optional<std::string> Global(absl::string_view param) const;
  // A share's effective value (its own, else [global]'s). nullopt when neither has it.
  std::optional<std::string> ShareValue(const TestparmSection& share,
                                        absl::string_view param) const;
  // The share section with this name (case-insensitive, as Samba matches share names).
  const TestparmSection* FindShare(absl::string_view name) const;

 private:
  std::map<std::string, std::string> global_;
  std::vector<TestparmSection> shares_;
};

// Samba's yes/no words: "Yes"/"No"/"true"/"false"/"1"/"0"/"on"/"off". nullopt otherwise.
std::optional<bool> ParseSambaBool(absl::string_view value);

// Fills posture->server, posture->client and posture->shares from the effective configuration.
// Values smbd would ignore (an unknown algorithm name, an unknown protocol word) are reported as
// probe errors with code "UNKNOWN_VALUE" rather than guessed.
void FillConfig(const TestparmConfig& config, smbfleet::v1::Posture* posture);

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_TESTPARM_PARSER_H_
