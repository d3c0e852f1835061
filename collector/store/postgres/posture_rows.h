#ifndef SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_ROWS_H_
#define SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_ROWS_H_

// The flattened rows of a host's latest posture (sessions, shares) and its benchmark history,
// for views and dashboards. Each is written in bulk, not row by row.

#include <cstdint>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "smbfleet/v1/posture.pb.h"

namespace smbfleet::collector::pg {

// Benchmark rows are kept per host over time; the same run reported again is stored once.
// received: RFC 3339, the time of a run that carries none.
void SaveBenchmarks(pqxx::work& tx, int64_t host_id, const smbfleet::v1::Posture& posture,
                    const std::string& received);

// A host's id and its new current posture.
using HostPosture = std::pair<int64_t, const smbfleet::v1::Posture*>;

// The hosts' session rows (or share rows) replaced by their postures', for all of them at once:
// one DELETE and one COPY (one INSERT), so that the kept counts' statement triggers run once.
// The hosts are distinct.
void ReplaceSessions(pqxx::work& tx, const std::vector<HostPosture>& hosts);
void ReplaceShares(pqxx::work& tx, const std::vector<HostPosture>& hosts);

}  // namespace smbfleet::collector::pg

#endif  // SMBFLEET_COLLECTOR_STORE_POSTGRES_POSTURE_ROWS_H_
