#include "collector/store/postgres/sql.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace smbfleet::collector::pg {

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::string TimestampText(const google::protobuf::Timestamp& ts) {
  if (ts.seconds() == 0 && ts.nanos() == 0) return "";
  return Rfc3339(absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos()));
}

void SetTimestamp(const pqxx::field& f, google::protobuf::Timestamp* ts) {
  if (f.is_null()) return;
  double seconds = f.as<double>();
  ts->set_seconds(static_cast<int64_t>(seconds));
  ts->set_nanos(static_cast<int32_t>((seconds - static_cast<double>(ts->seconds())) * 1e9));
}

void SetTimestampFromMicros(const pqxx::field& f, google::protobuf::Timestamp* ts) {
  if (f.is_null()) return;
  const auto micros = f.as<int64_t>();
  int64_t seconds = micros / 1000000;
  int64_t rest = micros % 1000000;
  if (rest < 0) {
    rest += 1000000;
    --seconds;
  }
  ts->set_seconds(seconds);
  ts->set_nanos(static_cast<int32_t>(rest * 1000));
}

uint32_t HostCount(pqxx::transaction_base& tx) {
  return tx.exec1("SELECT COALESCE(sum(n), 0) FROM host_counts")[0].as<uint32_t>();
}

std::optional<std::string> StatusText(smbfleet::v1::ComplianceStatus s) {
  if (s == smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED) return std::nullopt;
  return std::string(
      absl::StripPrefix(smbfleet::v1::ComplianceStatus_Name(s), "COMPLIANCE_STATUS_"));
}

smbfleet::v1::ComplianceStatus StatusFromText(const std::string& text) {
  smbfleet::v1::ComplianceStatus s = smbfleet::v1::COMPLIANCE_STATUS_UNSPECIFIED;
  smbfleet::v1::ComplianceStatus_Parse("COMPLIANCE_STATUS_" + text, &s);
  return s;
}

namespace {

// An element of an array's input text: quoted, with `"` and `\` escaped.
void AppendQuoted(const std::string& value, std::string* out) {
  *out += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') *out += '\\';
    *out += c;
  }
  *out += '"';
}

}  // namespace

std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    AppendQuoted(values[i], &out);
  }
  out += '}';
  return out;
}

std::string NullableTextArray(const std::vector<std::optional<std::string>>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if (values[i].has_value()) {
      AppendQuoted(*values[i], &out);
    } else {
      out += "NULL";
    }
  }
  out += '}';
  return out;
}

std::string BigintArray(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

std::string BoolArray(const std::vector<bool>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += values[i] ? 't' : 'f';
  }
  out += '}';
  return out;
}

std::string NullableBoolArray(const std::vector<std::optional<bool>>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += !values[i].has_value() ? "NULL" : *values[i] ? "t" : "f";
  }
  out += '}';
  return out;
}

std::string DoubleArray(const std::vector<double>& values) {
  std::vector<std::string> texts;
  texts.reserve(values.size());
  for (double d : values) texts.push_back(pqxx::to_string(d));
  return absl::StrCat("{", absl::StrJoin(texts, ","), "}");
}

}  // namespace smbfleet::collector::pg
