#ifndef SMBFLEET_LOADGEN_SIM_POSTURE_H_
#define SMBFLEET_LOADGEN_SIM_POSTURE_H_

#include <cstdint>
#include <random>
#include <string>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::loadgen {

// A Samba server's posture as the real agent reports it (server settings, shares, sessions with
// dialects and ciphers). `sequence` and `rng` vary the sessions and a few settings, so that
// consecutive reports of one host are changes, not "unchanged".
smbfleet::v1::Posture SimulatedPosture(const std::string& host, uint64_t sequence,
                                       std::mt19937_64& rng);

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_SIM_POSTURE_H_
