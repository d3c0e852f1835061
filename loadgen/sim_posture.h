#ifndef SMBFLEET_LOADGEN_SIM_POSTURE_H_
#define SMBFLEET_LOADGEN_SIM_POSTURE_H_

#include <cstdint>
#include <random>
#include <string>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::loadgen {

// What kind of server one simulated host is; fixed for the host's life, drawn from its seed.
struct HostShape {
  bool windows = false;  // a Windows file server, else a Samba one
  int shares = 3;        // 1-50, plus the administrative shares on Windows
  int sessions = 4;      // 0-200 connected clients
  int events = 1;        // 0-5 SMB events per report
};

// A fleet's mix: three in ten Windows, shares and sessions skewed small (most servers are small),
// a few events. The same `rng` state gives the same shape.
HostShape DrawShape(std::mt19937_64& rng);

// A posture of `shape` as the real agent reports it (server settings, shares, sessions with
// dialects, signing and ciphers, events). `sequence` and `rng` vary the sessions and a few
// settings, so that consecutive postures of one host differ (a change, not "unchanged"). The
// settings follow sequence / settings_every: with 24, hourly postures change their sessions and
// events every time and their settings once a day.
// session_reports: how many consecutive postures a session lasts. 1: every session is new in
// every posture. N > 1: each session slot keeps its client (id, address, name, user, dialect)
// for N postures, staggered so that 1/N of the sessions are new in each, while its open files
// and age move on every time (a file server's clients stay connected for hours).
smbfleet::v1::Posture SimulatedPosture(const std::string& host, const HostShape& shape,
                                       uint64_t sequence, std::mt19937_64& rng,
                                       uint64_t settings_every = 1, uint64_t session_reports = 1);

}  // namespace smbfleet::loadgen

#endif  // SMBFLEET_LOADGEN_SIM_POSTURE_H_
