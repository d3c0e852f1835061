#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_PARSERS_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_PARSERS_H_

// Portable parsers: one cmdlet's ConvertTo-Json output (the bytes of a capture file or of a live
// call's stdout) into the matching part of a Posture. Every property the contract names maps to
// a typed field; a property the build lacks stays unset (unknown, never false); other properties
// land in the `raw` maps or are ignored, never an error.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/core/probe_errors.h"
#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::agent::windows {

// Parses `bytes` (what = file name or probe name, for errors) into `posture`. A malformed whole
// input is an error status; a single property of the wrong shape is one line in `problems` and
// the rest is still parsed.
using ProbeParser = absl::Status (*)(absl::string_view bytes, absl::string_view what,
                                     smbfleet::v1::Posture* posture,
                                     std::vector<std::string>* problems);

absl::Status ParseHostInfo(absl::string_view bytes, absl::string_view what,
                           smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseServerConfiguration(absl::string_view bytes, absl::string_view what,
                                      smbfleet::v1::Posture* posture,
                                      std::vector<std::string>* problems);
absl::Status ParseClientConfiguration(absl::string_view bytes, absl::string_view what,
                                      smbfleet::v1::Posture* posture,
                                      std::vector<std::string>* problems);
absl::Status ParseShares(absl::string_view bytes, absl::string_view what,
                         smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseSessions(absl::string_view bytes, absl::string_view what,
                           smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseConnections(absl::string_view bytes, absl::string_view what,
                              smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseMultichannelConnections(absl::string_view bytes, absl::string_view what,
                                          smbfleet::v1::Posture* posture,
                                          std::vector<std::string>* problems);
absl::Status ParseOpenFiles(absl::string_view bytes, absl::string_view what,
                            smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseNetworkInterfaces(absl::string_view bytes, absl::string_view what,
                                    smbfleet::v1::Posture* posture,
                                    std::vector<std::string>* problems);
// Get-NetAdapter (MSFT_NetAdapter: name, description, speed, status, MTU, MAC) and
// Get-NetAdapterRss (MSFT_NetAdapterRssSettingData: Enabled, NumberOfReceiveQueues). The NIC
// probes join into one posture.nics[] entry per adapter, in whatever order they run.
absl::Status ParseNetAdapters(absl::string_view bytes, absl::string_view what,
                              smbfleet::v1::Posture* posture, std::vector<std::string>* problems);
absl::Status ParseNetAdapterRss(absl::string_view bytes, absl::string_view what,
                                smbfleet::v1::Posture* posture, std::vector<std::string>* problems);

// Registry keys that hold settings no cmdlet reports, as the registry probes print them: the key's
// values as Get-ItemProperty shows them (an array of one object; [] when the key does not exist).
// A missing key or value means the Windows default; no output at all leaves the fields unknown.
//   Registry-LanmanServer:      ...\Services\LanmanServer\Parameters RestrictNullSessAccess
//   Registry-LanmanWorkstation: ...\Services\LanmanWorkstation\Parameters EnablePlainTextPassword
//   Registry-HardenedPaths:     SOFTWARE\Policies\Microsoft\Windows\NetworkProvider\HardenedPaths
absl::Status ParseLanmanServerRegistry(absl::string_view bytes, absl::string_view what,
                                       smbfleet::v1::Posture* posture,
                                       std::vector<std::string>* problems);
absl::Status ParseLanmanWorkstationRegistry(absl::string_view bytes, absl::string_view what,
                                            smbfleet::v1::Posture* posture,
                                            std::vector<std::string>* problems);
absl::Status ParseHardenedPaths(absl::string_view bytes, absl::string_view what,
                                smbfleet::v1::Posture* posture, std::vector<std::string>* problems);

// The registry key each registry probe reads ("HKLM:\SYSTEM\...", as PowerShell's registry
// provider names it); empty for other probes.
absl::string_view RegistryKeyOf(absl::string_view probe);

// One probe: its name in probe_errors, its capture file, its parser, the sections it fills.
struct ProbeSpec {
  absl::string_view probe;  // "Get-SmbShare"
  absl::string_view file;   // "Get-SmbShare.json"
  ProbeParser parse;
  Sections sections;

  Probe id() const { return Probe{probe, sections}; }
};

// Every probe except events, in collection order (configuration and shares before sessions and
// open files, which refer to them).
const std::vector<ProbeSpec>& WindowsProbes();

// After all probes: platform, per-session signing/encryption derived from that session's open
// files (server sessions carry none; no open files = unknown), open files' share names from the
// share paths, one ShareConnection per share a session has files open on.
void FinishPosture(smbfleet::v1::Posture* posture);

// "2.0.2", "2.02", "2.1", "2.10", "3.0", "3.00", "3.02", "3.0.2", "3.1.1", "3.11", "1.5",
// "SMB311", "SMB3_11", 785, "785", "0x0311". Unrecognised = DIALECT_UNSPECIFIED.
smbfleet::v1::Dialect ParseDialect(absl::string_view text);

// "AES_128_GCM", "AES-128-GCM", "aes128gcm"... Unrecognised = CRYPTO_ALGORITHM_UNSPECIFIED.
smbfleet::v1::CryptoAlgorithm ParseCipher(absl::string_view text);

}  // namespace smbfleet::agent::windows

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_PARSERS_H_
