#ifndef SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_
#define SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_

#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "smbfleet/v1/agent.pb.h"

namespace smbfleet::collector {

// Bounds on what one report may hold. Every string and every list or map of the report has a
// limit: its own in the tables below (keyed by the field's path in JSON names, without
// indices: "posture.sessions.shares", map keys and values as "posture.host.labels.key" and
// "...labels.value"), else the defaults. docs/limits.md lists them.
struct IngestLimits {
  size_t max_string_bytes = 4096;  // any string without a limit of its own
  size_t max_entries = 1000;       // any list or map without a limit of its own
  // The limits that matter most, by name (they override the tables).
  size_t max_shares = 10'000;
  size_t max_sessions = 100'000;
  size_t max_events = 10'000;
  size_t max_labels = 64;
  size_t max_share_name_bytes = 255;
  std::map<std::string, size_t, std::less<>> entries = DefaultEntryLimits();
  std::map<std::string, size_t, std::less<>> string_bytes = DefaultStringLimits();

  static std::map<std::string, size_t, std::less<>> DefaultEntryLimits();
  static std::map<std::string, size_t, std::less<>> DefaultStringLimits();

  size_t EntriesOf(absl::string_view path) const;
  size_t BytesOf(absl::string_view path) const;
};

// Checks a report before it is stored, walking every field of the message (new fields are
// covered without edits here): each string is UTF-8 without U+0000 (PostgreSQL text and jsonb
// refuse it) and within its byte limit, each list and map within its entry limit, each
// Timestamp within 0001-01-01..9999-12-31 (protobuf's JSON mapping; timestamptz holds it).
// The error names the field and what is wrong, e.g. "posture.shares[3].name: 300 bytes, limit
// 255" or "posture.shares[3].name: contains U+0000". All problems are listed, up to a bound.
// A report without a posture is digest-only: its posture_digest must look like one.
absl::Status ValidateReport(const smbfleet::v1::ReportRequest& request,
                            const IngestLimits& limits = {});

bool IsUuid(absl::string_view s);

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_INGEST_VALIDATE_H_
