#include "collector/ingest/validate.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smbfleet::collector {
namespace {

class Problems {
 public:
  void Add(std::string p) {
    if (problems_.size() < kMax) problems_.push_back(std::move(p));
    ++count_;
  }
  void CheckString(const std::string& path, const std::string& value, size_t limit) {
    if (value.size() > limit) Add(absl::StrCat(path, ": ", value.size(), " bytes, limit ", limit));
  }
  template <typename T>
  void CheckCount(const std::string& path, const T& field, size_t limit) {
    if (static_cast<size_t>(field.size()) > limit) {
      Add(absl::StrCat(path, ": ", field.size(), " entries, limit ", limit));
    }
  }
  absl::Status ToStatus() const {
    if (count_ == 0) return absl::OkStatus();
    std::string more =
        count_ > problems_.size() ? absl::StrCat("; and ", count_ - problems_.size(), " more") : "";
    return absl::InvalidArgumentError(
        absl::StrCat("report rejected: ", absl::StrJoin(problems_, "; "), more));
  }

 private:
  static constexpr size_t kMax = 20;
  std::vector<std::string> problems_;
  size_t count_ = 0;
};

}  // namespace

bool IsUuid(absl::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!absl::ascii_isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

absl::Status ValidateReport(const smbfleet::v1::ReportRequest& request,
                            const IngestLimits& limits) {
  Problems p;
  if (!IsUuid(request.report_id())) {
    p.Add(absl::StrCat("reportId: '", request.report_id().substr(0, 64),
                       "' is not a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"));
  }
  p.CheckString("reason", request.reason(), 64);
  if (!request.has_posture()) {
    p.Add("posture: missing");
    return p.ToStatus();
  }
  const auto& posture = request.posture();
  const auto& host = posture.host();
  p.CheckString("posture.host.hostname", host.hostname(), 255);
  p.CheckString("posture.host.fqdn", host.fqdn(), 255);
  p.CheckString("posture.host.osName", host.os_name(), limits.max_string_bytes);
  p.CheckString("posture.host.osVersion", host.os_version(), limits.max_string_bytes);
  p.CheckCount("posture.host.labels", host.labels(), limits.max_labels);
  for (const auto& [k, v] : host.labels()) {
    p.CheckString(absl::StrCat("posture.host.labels[", k.substr(0, 64), "]"), k, 128);
    p.CheckString(absl::StrCat("posture.host.labels[", k.substr(0, 64), "]"), v, 1024);
  }
  p.CheckCount("posture.shares", posture.shares(), limits.max_shares);
  for (int i = 0; i < posture.shares_size(); ++i) {
    const auto& s = posture.shares(i);
    std::string path = absl::StrCat("posture.shares[", i, "]");
    if (s.name().empty()) p.Add(absl::StrCat(path, ".name: empty"));
    p.CheckString(path + ".name", s.name(), limits.max_share_name_bytes);
    p.CheckString(path + ".path", s.path(), limits.max_string_bytes);
  }
  p.CheckCount("posture.sessions", posture.sessions(), limits.max_sessions);
  for (int i = 0; i < posture.sessions_size(); ++i) {
    const auto& s = posture.sessions(i);
    std::string path = absl::StrCat("posture.sessions[", i, "]");
    p.CheckString(path + ".sessionId", s.session_id(), 64);
    p.CheckString(path + ".clientAddress", s.client_address(), 255);
    p.CheckString(path + ".clientName", s.client_name(), 255);
    p.CheckString(path + ".user", s.user(), 512);
    for (int j = 0; j < s.shares_size(); ++j) {
      p.CheckString(absl::StrCat(path, ".shares[", j, "].name"), s.shares(j).name(),
                    limits.max_share_name_bytes);
    }
  }
  p.CheckCount("posture.events", posture.events(), limits.max_events);
  return p.ToStatus();
}

}  // namespace smbfleet::collector
