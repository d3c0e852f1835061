#ifndef SMBFLEET_CLI_RENDER_H_
#define SMBFLEET_CLI_RENDER_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/timestamp.pb.h"
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
// "ROLLING_OUT", "PRECONDITION_FAILED": the enum names without their prefix.
std::string ChangeStateText(smbfleet::v1::ChangeState s);
std::string HostChangeStateText(smbfleet::v1::HostChangeState s);

// Shared by every view.
// "2026-12-01 10:00:00Z"; "-" for an unset time.
std::string TimeText(const google::protobuf::Timestamp& ts);
// Control characters (C0, DEL, C1), bidirectional controls and bytes that are not UTF-8 shown
// escaped (\x1b, \u202e): every string a host or a person supplied goes through this.
std::string Clean(absl::string_view s);
// Left-aligned columns, two spaces apart, widths from the content.
void Table(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_RENDER_H_
