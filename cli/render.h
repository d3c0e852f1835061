#ifndef SMBFLEET_CLI_RENDER_H_
#define SMBFLEET_CLI_RENDER_H_

#include <cstddef>
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
// `readiness`: the clients (server settings) or servers (client settings) enforcing would cut
// off, one row each, with first/last seen, the hosts involved and the reasons.
void RenderReadiness(const smbfleet::v1::GetReadinessResponse& r, std::ostream& out);

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
// Left-aligned columns, two spaces apart, widths from the content; over TableWidth() columns the
// widest columns are cut (with an ellipsis), never wrapped.
void Table(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

// The width tables are fitted to; 0 (the default): no limit.
void SetTableWidth(size_t columns);
size_t TableWidth();
// Whether stdout is a terminal (default false): `changes watch` then redraws a progress bar.
void SetStdoutIsTerminal(bool is_terminal);
bool StdoutIsTerminal();
// The width of stdout's terminal (TIOCGWINSZ), else $COLUMNS, else 0 (not a terminal: no limit).
size_t TerminalTableWidth();
// The rule TerminalTableWidth applies: tty_columns (<= 0: not a terminal), then columns_env.
size_t TableWidthFor(int tty_columns, const char* columns_env);
// Code points in s (Clean()ed text: one column each).
size_t DisplayWidth(absl::string_view s);
// text, or its first width-1 code points and an ellipsis when it is wider than width.
std::string FitCell(absl::string_view text, size_t width);

// `compliance --format=csv`: RFC 4180 (CRLF lines; fields with a comma, quote or line break
// quoted, quotes doubled), one row per rule, a header first.
void RenderComplianceCsv(const smbfleet::v1::GetComplianceResponse& c, std::ostream& out);
// One CSV field: control characters escaped as Clean() does (line breaks kept), a leading
// = + - @ prefixed with ' so that a spreadsheet does not run it as a formula, quoted as needed.
std::string CsvField(absl::string_view value);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_RENDER_H_
