#include "cli/render.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/safe_text.h"

namespace smbfleet::cli {
namespace {

using smbfleet::v1::Posture;

std::string Opt(bool has, bool v) { return has ? (v ? "yes" : "no") : "unknown"; }

// A session's lowest round-trip time in ms: three decimals on a LAN, one beyond 10 ms.
std::string MinRttText(uint32_t us) {
  double ms = us / 1000.0;
  if (us >= 10000) return absl::StrFormat("%.1f ms", ms);
  if (us >= 1000) return absl::StrFormat("%.2f ms", ms);
  return absl::StrFormat("%.3f ms", ms);
}

// "25 Gbit/s", "100 Mbit/s", "2.5 Gbit/s"; "unknown" when the host did not say.
std::string SpeedText(const smbfleet::v1::Nic& nic) {
  if (!nic.has_link_speed_bps()) return "unknown";
  double bps = static_cast<double>(nic.link_speed_bps());
  if (bps >= 1e9) return absl::StrCat(bps / 1e9, " Gbit/s");
  return absl::StrCat(bps / 1e6, " Mbit/s");
}

// "8 (on)", "1 (off)", "on", "unknown".
std::string RssText(const smbfleet::v1::Nic& nic) {
  std::string enabled = nic.has_rss_enabled() ? (nic.rss_enabled() ? "on" : "off") : "";
  if (!nic.has_rss_queues()) return enabled.empty() ? "unknown" : enabled;
  return enabled.empty() ? absl::StrCat(nic.rss_queues())
                         : absl::StrCat(nic.rss_queues(), " (", enabled, ")");
}

std::string ChangeRef(const std::string& id, uint64_t version) {
  return absl::StrCat(Clean(id), " v", version);
}

bool HasChangeStatus(const smbfleet::v1::HostChangeStatus& c) {
  return !c.desired_change_id().empty() || !c.applied_change_id().empty() ||
         c.last_result() != smbfleet::v1::HOST_CHANGE_STATE_UNSPECIFIED;
}

// "c1 v2 applied" when the host is where it should be; else what it should be at and what
// its last ack said.
std::string ChangeStatusShort(const smbfleet::v1::HostChangeStatus& c) {
  if (!HasChangeStatus(c)) return "-";
  if (!c.desired_change_id().empty() && c.desired_change_id() == c.applied_change_id() &&
      c.desired_version() == c.applied_version()) {
    return absl::StrCat(ChangeRef(c.desired_change_id(), c.desired_version()), " applied");
  }
  std::string text =
      c.desired_change_id().empty()
          ? absl::StrCat("applied ", ChangeRef(c.applied_change_id(), c.applied_version()))
          : absl::StrCat(ChangeRef(c.desired_change_id(), c.desired_version()), " wanted");
  if (c.last_result() != smbfleet::v1::HOST_CHANGE_STATE_UNSPECIFIED) {
    absl::StrAppend(&text, " (last ", HostChangeStateText(c.last_result()), ")");
  }
  return text;
}

}  // namespace

std::string TimeText(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%SZ", absl::FromUnixSeconds(ts.seconds()),
                          absl::UTCTimeZone());
}

// Host- and operator-supplied strings and the collector's messages go through the one escaper
// the logs use, so that a hostile share name cannot rewrite the terminal or reorder a line.
std::string Clean(absl::string_view s) { return EscapeUnsafeText(s); }

namespace {

// 0: no limit. Set once by main from the terminal (SetTableWidth).
size_t table_width = 0;
bool stdout_is_terminal = false;

// A column is never cut below this (an ellipsis and a few characters).
constexpr size_t kMinColumn = 4;

}  // namespace

void SetTableWidth(size_t columns) { table_width = columns; }
size_t TableWidth() { return table_width; }
void SetStdoutIsTerminal(bool is_terminal) { stdout_is_terminal = is_terminal; }
bool StdoutIsTerminal() { return stdout_is_terminal; }

size_t TableWidthFor(int tty_columns, const char* columns_env) {
  if (tty_columns > 0) return static_cast<size_t>(tty_columns);
  size_t columns = 0;
  if (columns_env != nullptr && absl::SimpleAtoi(columns_env, &columns) && columns > 0) {
    return columns;
  }
  return 0;
}

size_t TerminalTableWidth() {
  struct winsize ws {};
  int tty_columns = -1;
  if (::isatty(STDOUT_FILENO) == 1 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
    tty_columns = ws.ws_col;
  }
  return TableWidthFor(tty_columns, std::getenv("COLUMNS"));
}

size_t DisplayWidth(absl::string_view s) {
  // Clean() leaves valid UTF-8: one column per code point (no wide characters assumed).
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string FitCell(absl::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) return std::string(text);
  if (width == 0) return "";
  // The first width-1 code points, then an ellipsis.
  size_t kept = 0, end = 0;
  while (end < text.size()) {
    size_t next = end + 1;
    while (next < text.size() && (text[next] & 0xC0) == 0x80) ++next;
    if (kept + 1 > width - 1) break;
    ++kept;
    end = next;
  }
  return absl::StrCat(text.substr(0, end), "\u2026");
}

// Column widths from the content; over TableWidth(), the widest columns give way first, each
// cut with an ellipsis, never wrapped.
void Table(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], DisplayWidth(r[i]));
  }
  if (table_width > 0 && !width.empty()) {
    size_t total = 2 * (width.size() - 1);
    for (size_t w : width) total += w;
    while (total > table_width) {
      auto widest = std::max_element(width.begin(), width.end());
      if (*widest <= kMinColumn) break;
      --*widest;
      --total;
    }
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      std::string cell = FitCell(r[i], width[i]);
      const size_t shown = DisplayWidth(cell);
      line += cell;
      if (i + 1 < r.size()) line += std::string(width[i] - shown + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string CsvField(absl::string_view value) {
  // Other control characters are escaped as everywhere else; a line break stays a line break.
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(value, '\n')) lines.push_back(Clean(line));
  std::string text = absl::StrJoin(lines, "\n");
  // A spreadsheet would run "=...", "+...", "-...", "@..." as a formula.
  if (!text.empty() && absl::string_view("=+-@").find(text[0]) != absl::string_view::npos) {
    text.insert(0, "'");
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\"", "\"\""}}), "\"");
}

void RenderComplianceCsv(const smbfleet::v1::GetComplianceResponse& c, std::ostream& out) {
  auto row = [&out](const std::vector<std::string>& cells) {
    std::vector<std::string> fields;
    fields.reserve(cells.size());
    for (const std::string& cell : cells) fields.push_back(CsvField(cell));
    out << absl::StrJoin(fields, ",") << "\r\n";
  };
  row({"policy", "policy_version", "rule", "compliant_pct", "compliant", "non_compliant", "waived",
       "unknown", "errors", "not_applicable"});
  for (const auto& r : c.rules()) {
    row({c.policy_name(), c.policy_version(), r.rule_id(),
         r.compliant_pct() < 0 ? "" : absl::StrFormat("%.1f", r.compliant_pct()),
         absl::StrCat(r.compliant()), absl::StrCat(r.non_compliant()), absl::StrCat(r.waived()),
         absl::StrCat(r.unknown()), absl::StrCat(r.errors()), absl::StrCat(r.not_applicable())});
  }
}

std::string HostChangeStateText(smbfleet::v1::HostChangeState s) {
  std::string name = smbfleet::v1::HostChangeState_Name(s);
  if (name.empty()) return absl::StrCat("STATE_", static_cast<int>(s));
  return name.substr(std::string("HOST_CHANGE_STATE_").size());
}

std::string ChangeStateText(smbfleet::v1::ChangeState s) {
  std::string name = smbfleet::v1::ChangeState_Name(s);
  if (name.empty()) return absl::StrCat("STATE_", static_cast<int>(s));
  return name.substr(std::string("CHANGE_STATE_").size());
}

std::string DialectText(smbfleet::v1::Dialect d) {
  switch (d) {
    case smbfleet::v1::DIALECT_SMB1:
      return "SMB1";
    case smbfleet::v1::DIALECT_SMB_2_0_2:
      return "SMB 2.0.2";
    case smbfleet::v1::DIALECT_SMB_2_1:
      return "SMB 2.1";
    case smbfleet::v1::DIALECT_SMB_3_0:
      return "SMB 3.0";
    case smbfleet::v1::DIALECT_SMB_3_0_2:
      return "SMB 3.0.2";
    case smbfleet::v1::DIALECT_SMB_3_1_1:
      return "SMB 3.1.1";
    default:
      return "unknown";
  }
}

std::string ProtectionText(smbfleet::v1::Protection p) {
  switch (p) {
    case smbfleet::v1::PROTECTION_NONE:
      return "none";
    case smbfleet::v1::PROTECTION_PARTIAL:
      return "partial";
    case smbfleet::v1::PROTECTION_FULL:
      return "full";
    default:
      return "unknown";
  }
}

std::string AlgorithmText(smbfleet::v1::CryptoAlgorithm a) {
  if (a == smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED) return "-";
  std::string name = smbfleet::v1::CryptoAlgorithm_Name(a);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

void RenderHostTable(const smbfleet::v1::ListHostsResponse& hosts, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"HOST", "PLATFORM", "OS", "SHARES", "SESSIONS", "ERRORS", "STREAM", "LAST SEEN"}};
  // The change column only once some host has a change: desired vs applied.
  bool changes = std::any_of(hosts.hosts().begin(), hosts.hosts().end(),
                             [](const auto& h) { return HasChangeStatus(h.change_status()); });
  if (changes) rows[0].push_back("CHANGE");
  for (const auto& h : hosts.hosts()) {
    std::string platform = smbfleet::v1::Platform_Name(h.platform());
    if (platform.rfind("PLATFORM_", 0) == 0) platform = platform.substr(9);
    rows.push_back({Clean(h.name()), platform,
                    Clean(absl::StrCat(h.os_name(), " ", h.os_version())), absl::StrCat(h.shares()),
                    absl::StrCat(h.sessions()), absl::StrCat(h.probe_errors()),
                    h.connected() ? "connected" : "-", TimeText(h.last_seen())});
    if (changes) rows.back().push_back(ChangeStatusShort(h.change_status()));
  }
  Table(rows, out);
  if (hosts.hosts_size() == 0) out << "(no hosts have reported yet)\n";
}

void RenderHost(const smbfleet::v1::GetHostResponse& host, std::ostream& out) {
  const auto& s = host.summary();
  const Posture& p = host.posture();
  out << "Host:        " << Clean(s.name()) << "\n";
  out << "Platform:    " << smbfleet::v1::Platform_Name(s.platform()) << "  "
      << Clean(p.host().os_name()) << " " << Clean(p.host().os_version()) << "\n";
  out << "Agent:       " << Clean(s.agent_version()) << (s.connected() ? " (stream open)" : "")
      << "\n";
  out << "First seen:  " << TimeText(s.first_seen()) << "\n";
  out << "Last seen:   " << TimeText(s.last_seen()) << "\n";
  out << "Changed:     " << TimeText(s.last_changed()) << "\n";
  if (const auto& c = s.change_status(); HasChangeStatus(c)) {
    out << "Change:      " << ChangeStatusShort(c);
    if (c.last_ack_at().seconds() != 0) out << ", last ack " << TimeText(c.last_ack_at());
    if (!c.last_error().empty()) out << ": " << Clean(c.last_error());
    out << "\n";
  }
  if (!s.labels().empty()) {
    std::vector<std::string> labels;
    for (const auto& [k, v] : s.labels()) labels.push_back(absl::StrCat(Clean(k), "=", Clean(v)));
    std::sort(labels.begin(), labels.end());
    out << "Labels:      " << absl::StrJoin(labels, ", ") << "\n";
  }
  const auto& srv = p.server();
  out << "\nServer\n";
  Table({{"  SMB1 enabled", Opt(srv.has_smb1_enabled(), srv.smb1_enabled())},
         {"  signing required", Opt(srv.has_require_signing(), srv.require_signing())},
         {"  encrypt data", Opt(srv.has_encrypt_data(), srv.encrypt_data())},
         {"  reject unencrypted",
          Opt(srv.has_reject_unencrypted_access(), srv.reject_unencrypted_access())},
         {"  min dialect", srv.has_min_dialect() ? DialectText(srv.min_dialect()) : "unknown"},
         {"  max dialect", srv.has_max_dialect() ? DialectText(srv.max_dialect()) : "unknown"}},
        out);
  out << "\nShares (" << p.shares_size() << ")\n";
  std::vector<std::vector<std::string>> shares = {{"  NAME", "PATH", "ENCRYPT", "CLASS"}};
  for (const auto& sh : p.shares()) {
    shares.push_back({"  " + Clean(sh.name()), Clean(sh.path()),
                      Opt(sh.has_encrypt_data(), sh.encrypt_data()),
                      sh.classification().empty() ? "-" : Clean(sh.classification())});
  }
  Table(shares, out);
  out << "\nSessions (" << p.sessions_size() << ")\n";
  std::vector<std::vector<std::string>> sessions = {{"  ID", "CLIENT", "USER", "DIALECT", "SHARE",
                                                     "SIGNING", "ENCRYPTION", "CIPHER",
                                                     "RTT (MIN)"}};
  for (const auto& se : p.sessions()) {
    std::string rtt = se.has_min_rtt_us() ? MinRttText(se.min_rtt_us()) : "-";
    if (se.shares().empty()) {
      sessions.push_back({"  " + Clean(se.session_id()), Clean(se.client_address()),
                          Clean(se.user()), DialectText(se.dialect()), "-",
                          ProtectionText(se.signing()), ProtectionText(se.encryption()),
                          AlgorithmText(se.cipher()), rtt});
    }
    for (const auto& sc : se.shares()) {
      sessions.push_back(
          {"  " + Clean(se.session_id()), Clean(se.client_address()), Clean(se.user()),
           DialectText(se.dialect()), Clean(sc.name()), ProtectionText(sc.signing()),
           ProtectionText(sc.encryption()),
           AlgorithmText(sc.cipher() != smbfleet::v1::CRYPTO_ALGORITHM_UNSPECIFIED ? sc.cipher()
                                                                                   : se.cipher()),
           rtt});
    }
  }
  Table(sessions, out);
  if (p.nics_size() > 0) {
    out << "\nNICs (" << p.nics_size() << ")\n";
    std::vector<std::vector<std::string>> nics = {
        {"  NAME", "UP", "SPEED", "RSS QUEUES", "RSS CAPABLE", "RDMA"}};
    for (const auto& nic : p.nics()) {
      nics.push_back({"  " + Clean(nic.name()), Opt(nic.has_up(), nic.up()), SpeedText(nic),
                      RssText(nic), Opt(nic.has_rss_capable(), nic.rss_capable()),
                      Opt(nic.has_rdma_capable(), nic.rdma_capable())});
    }
    Table(nics, out);
  }
  if (p.probe_errors_size() > 0) {
    out << "\nProbe errors (" << p.probe_errors_size() << ")\n";
    for (const auto& e : p.probe_errors()) {
      out << "  " << Clean(e.probe()) << ": " << Clean(e.code()) << " " << Clean(e.message())
          << "\n";
    }
  }
  if (p.benchmarks_size() > 0) {
    out << "\nCrypto benchmark (" << p.benchmarks_size() << " results)\n";
    std::vector<std::vector<std::string>> rows = {{"  ALGORITHM", "BUFFER", "THREADS", "MB/s"}};
    for (const auto& b : p.benchmarks()) {
      rows.push_back({"  " + AlgorithmText(b.algorithm()), absl::StrCat(b.buffer_bytes()),
                      absl::StrCat(b.threads()),
                      absl::StrCat(static_cast<int64_t>(b.bytes_per_second() / 1e6))});
    }
    Table(rows, out);
  }
}

void RenderCompliance(const smbfleet::v1::GetComplianceResponse& c, std::ostream& out) {
  if (c.policy_name().empty()) {
    out << "(no policy is active: set policy.file in the collector configuration)\n";
    return;
  }
  out << "Policy " << Clean(c.policy_name()) << " version " << Clean(c.policy_version()) << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"RULE", "COMPLIANT%", "OK", "FAILING", "WAIVED", "UNKNOWN", "ERROR", "N/A"}};
  for (const auto& r : c.rules()) {
    rows.push_back({Clean(r.rule_id()),
                    r.compliant_pct() < 0 ? "-" : absl::StrFormat("%.1f", r.compliant_pct()),
                    absl::StrCat(r.compliant()), absl::StrCat(r.non_compliant()),
                    absl::StrCat(r.waived()), absl::StrCat(r.unknown()), absl::StrCat(r.errors()),
                    absl::StrCat(r.not_applicable())});
  }
  Table(rows, out);
}

void RenderFindings(const smbfleet::v1::ListFindingsResponse& f, std::ostream& out) {
  // With --include-waived, the waiver that hides a result comes before the message.
  bool waived = std::any_of(f.findings().begin(), f.findings().end(),
                            [](const auto& x) { return !x.waiver_id().empty(); });
  std::vector<std::vector<std::string>> rows = {
      {"HOST", "RULE", "SHARE", "SEVERITY", "FAILING SINCE", "WHY"}};
  if (waived) rows[0].insert(rows[0].end() - 1, "WAIVED BY");
  for (const auto& x : f.findings()) {
    std::string severity = smbfleet::v1::Severity_Name(x.severity());
    if (severity.rfind("SEVERITY_", 0) == 0) severity = severity.substr(9);
    rows.push_back({Clean(x.host()), Clean(x.rule_id()), x.share().empty() ? "-" : Clean(x.share()),
                    severity, TimeText(x.failing_since()), Clean(x.message())});
    if (waived) {
      rows.back().insert(rows.back().end() - 1, x.waiver_id().empty() ? "-" : Clean(x.waiver_id()));
    }
  }
  Table(rows, out);
  if (f.findings_size() == 0) out << "(nothing is failing)\n";
}

void RenderReadiness(const smbfleet::v1::GetReadinessResponse& r, std::ostream& out) {
  out << Clean(r.requirement()) << "\n" << r.hosts_considered() << " failing host(s) considered";
  if (!r.side().empty()) out << "; " << Clean(r.side()) << "-side settings";
  out << "\n";
  auto span = [](const auto& x) {
    return std::pair<std::string, std::string>(x.has_first_seen() ? TimeText(x.first_seen()) : "-",
                                               x.has_last_seen() ? TimeText(x.last_seen()) : "-");
  };
  auto joined = [](const auto& list) {
    std::vector<std::string> cleaned;
    for (const auto& v : list) cleaned.push_back(Clean(v));
    return cleaned.empty() ? std::string("-") : absl::StrJoin(cleaned, "; ");
  };
  if (r.clients_size() > 0 || r.servers_size() == 0) {
    std::vector<std::vector<std::string>> rows = {
        {"CLIENT", "ADDRESS", "USER", "FIRST SEEN", "LAST SEEN", "HOSTS", "REASONS"}};
    for (const auto& c : r.clients()) {
      auto [first, last] = span(c);
      rows.push_back({c.client_name().empty() ? "-" : Clean(c.client_name()),
                      c.client_address().empty() ? "-" : Clean(c.client_address()),
                      c.user().empty() ? "-" : Clean(c.user()), first, last, joined(c.hosts()),
                      joined(c.reasons())});
    }
    if (r.clients_size() > 0) Table(rows, out);
  }
  if (r.servers_size() > 0) {
    if (r.clients_size() > 0) out << "\n";
    std::vector<std::vector<std::string>> rows = {
        {"SERVER", "ADDRESS", "FIRST SEEN", "LAST SEEN", "CLIENT HOSTS", "REASONS"}};
    for (const auto& s : r.servers()) {
      auto [first, last] = span(s);
      rows.push_back({s.server_name().empty() ? "-" : Clean(s.server_name()),
                      s.server_address().empty() ? "-" : Clean(s.server_address()), first, last,
                      joined(s.hosts()), joined(s.reasons())});
    }
    Table(rows, out);
  }
  if (r.clients_size() == 0 && r.servers_size() == 0) {
    out << "(nothing would be cut off, as far as sessions, connections and audit events show)\n";
  }
}

}  // namespace smbfleet::cli
