#ifndef SMBFLEET_CLI_RENDER_H_
#define SMBFLEET_CLI_RENDER_H_

#include <ostream>

#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::cli {

// Human-readable views; --format=json prints the protobuf JSON mapping instead.
void RenderHostTable(const smbfleet::v1::ListHostsResponse& hosts, std::ostream& out);
void RenderHost(const smbfleet::v1::GetHostResponse& host, std::ostream& out);
void RenderCompliance(const smbfleet::v1::GetComplianceResponse& c, std::ostream& out);
void RenderFindings(const smbfleet::v1::ListFindingsResponse& f, std::ostream& out);

// "SMB 3.1.1", "full", "AES-128-GCM": short names for tables.
std::string DialectText(smbfleet::v1::Dialect d);
std::string ProtectionText(smbfleet::v1::Protection p);
std::string AlgorithmText(smbfleet::v1::CryptoAlgorithm a);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_RENDER_H_
