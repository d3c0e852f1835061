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

std::string Literal(const pqxx::transaction_base& tx, const std::string& text) {
  return tx.quote(text);
}

std::string Literal(const pqxx::transaction_base& tx, const std::optional<std::string>& text) {
  return text ? tx.quote(*text) : "NULL";
}

std::string Literal(std::optional<bool> b) {
  if (!b) return "NULL";
  return *b ? "true" : "false";
}

std::string Literal(int64_t n) { return absl::StrCat(n); }

// Full precision: absl::StrCat would round to six digits.
std::string Literal(double d) { return absl::StrCat("'", pqxx::to_string(d), "'::float8"); }

std::string TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
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

InsertBatch::InsertBatch(pqxx::transaction_base& tx, std::string head, std::string tail)
    : tx_(tx), head_(std::move(head)), tail_(std::move(tail)) {}

void InsertBatch::Add(const std::vector<std::string>& values) {
  absl::StrAppend(&values_, rows_ == 0 ? "" : ", ", "(", absl::StrJoin(values, ", "), ")");
  if (++rows_ == kRowsPerStatement) Flush();
}

void InsertBatch::Flush() {
  if (rows_ == 0) return;
  tx_.exec(absl::StrCat(head_, " VALUES ", values_, " ", tail_));
  values_.clear();
  rows_ = 0;
}

}  // namespace smbfleet::collector::pg
