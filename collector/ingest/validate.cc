#include "collector/ingest/validate.h"

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/posture_digest.h"
#include "common/safe_text.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// What protobuf's JSON mapping accepts for a Timestamp: 0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59.999999999Z. timestamptz holds more, so this is the narrower bound.
constexpr int64_t kMinTimestampSeconds = -62'135'596'800;
constexpr int64_t kMaxTimestampSeconds = 253'402'300'799;

class Problems {
 public:
  void Add(std::string p) {
    if (problems_.size() < kMax) problems_.push_back(std::move(p));
    ++count_;
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

// Where a value is: a chain of fields, list indices and map keys, made into text
// ("posture.sessions[3].shares[0].name") only for a problem.
struct Where {
  const Where* parent = nullptr;
  const FieldDescriptor* field = nullptr;  // set: a field of the parent
  int index = -1;                          // >= 0: an entry of the parent list
  const std::string* map_key = nullptr;    // set: the entry of the parent map with this key
};

std::string Text(const Where& where) {
  std::vector<const Where*> chain;
  for (const Where* w = &where; w != nullptr; w = w->parent) chain.push_back(w);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Where& w = **it;
    if (w.field != nullptr) absl::StrAppend(&out, out.empty() ? "" : ".", w.field->json_name());
    if (w.index >= 0) absl::StrAppend(&out, "[", w.index, "]");
    if (w.map_key != nullptr) absl::StrAppend(&out, "[", Utf8Prefix(*w.map_key, 64), "]");
  }
  return out;
}

// A field as the limit tables name it, without indices ("posture.sessions.shares"), and its
// limits.
struct FieldLimits {
  std::string key;
  size_t entries = 0;
  size_t bytes = 0;
};

// Walks a message by reflection. Limits are looked up once per field of the schema, not per
// value: a report with 100,000 sessions builds no text unless something is wrong.
// Not walked: the change workflow checks counters around changes (common/change_counters.h),
// and they never fail a report.
const FieldDescriptor* ChangeCountersField() {
  static const FieldDescriptor* const field =
      smbfleet::v1::ReportRequest::descriptor()->FindFieldByName("change_counters");
  return field;
}

class Walker {
 public:
  Walker(const IngestLimits& limits, Problems* problems) : limits_(limits), p_(*problems) {}

  void Walk(const Message& msg, const Where& where, const FieldLimits* parent) {
    const Descriptor* d = msg.GetDescriptor();
    if (d->full_name() == "google.protobuf.Timestamp") {
      CheckTimestamp(msg, where);
      return;
    }
    const Reflection* r = msg.GetReflection();
    std::vector<const FieldDescriptor*> fields;
    r->ListFields(msg, &fields);  // set fields and non-empty lists only
    for (const FieldDescriptor* f : fields) {
      if (f == ChangeCountersField()) continue;
      const Where here{&where, f};
      const FieldLimits& limits = Child(parent, f);
      if (f->is_map()) {
        WalkMap(msg, f, here, limits);
      } else if (f->is_repeated()) {
        WalkList(msg, f, here, limits);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Walk(r->GetMessage(msg, f), here, &limits);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        CheckString(r->GetStringReference(msg, f, &scratch), f, here, limits);
      }
    }
  }

 private:
  const FieldLimits& Child(const FieldLimits* parent, const FieldDescriptor* f) {
    auto [it, inserted] = children_.try_emplace({parent, f}, nullptr);
    if (inserted) {
      FieldLimits& l = storage_.emplace_back();
      l.key = parent == nullptr ? f->json_name() : absl::StrCat(parent->key, ".", f->json_name());
      l.entries = limits_.EntriesOf(l.key);
      l.bytes = limits_.BytesOf(l.key);
      it->second = &l;
    }
    return *it->second;
  }

  bool Count(const Where& where, const FieldLimits& limits, int size) {
    if (static_cast<size_t>(size) <= limits.entries) return true;
    p_.Add(absl::StrCat(Text(where), ": ", size, " entries, limit ", limits.entries));
    return false;  // the entries of a list over its limit are not looked at
  }

  void WalkList(const Message& msg, const FieldDescriptor* f, const Where& where,
                const FieldLimits& limits) {
    const Reflection* r = msg.GetReflection();
    const int n = r->FieldSize(msg, f);
    if (!Count(where, limits, n)) return;
    for (int i = 0; i < n; ++i) {
      const Where item{&where, nullptr, i};
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Walk(r->GetRepeatedMessage(msg, f, i), item, &limits);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        CheckString(r->GetRepeatedStringReference(msg, f, i, &scratch), f, item, limits);
      }
    }
  }

  // A map is a list of entries with a key (field 1) and a value (field 2); an entry is named
  // by its key, cut, as in "posture.host.labels[site]". The tables name the key and the value
  // "posture.host.labels.key" and "...labels.value".
  void WalkMap(const Message& msg, const FieldDescriptor* f, const Where& where,
               const FieldLimits& limits) {
    const Reflection* r = msg.GetReflection();
    const int n = r->FieldSize(msg, f);
    if (!Count(where, limits, n)) return;
    const FieldDescriptor* key_field = f->message_type()->map_key();
    const FieldDescriptor* value_field = f->message_type()->map_value();
    const FieldLimits& key_limits = Child(&limits, key_field);
    const FieldLimits& value_limits = Child(&limits, value_field);
    for (int i = 0; i < n; ++i) {
      const Message& entry = r->GetRepeatedMessage(msg, f, i);
      const Reflection* er = entry.GetReflection();
      Where item{&where, nullptr, i};
      std::string key_scratch;
      if (key_field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        const std::string& k = er->GetStringReference(entry, key_field, &key_scratch);
        item = Where{&where, nullptr, -1, &k};
        CheckString(k, key_field, item, key_limits);
      }
      if (value_field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        std::string scratch;
        CheckString(er->GetStringReference(entry, value_field, &scratch), value_field, item,
                    value_limits);
      } else if (value_field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Walk(er->GetMessage(entry, value_field), item, &value_limits);
      }
    }
  }

  void CheckString(const std::string& value, const FieldDescriptor* f, const Where& where,
                   const FieldLimits& limits) {
    if (value.size() > limits.bytes) {
      p_.Add(absl::StrCat(Text(where), ": ", value.size(), " bytes, limit ", limits.bytes));
    }
    if (f->type() == FieldDescriptor::TYPE_BYTES) return;
    if (value.find('\0') != std::string::npos) {
      p_.Add(absl::StrCat(Text(where), ": contains U+0000"));
    } else if (!IsUtf8(value)) {
      p_.Add(absl::StrCat(Text(where), ": not UTF-8"));
    }
  }

  void CheckTimestamp(const Message& ts, const Where& where) {
    const Descriptor* d = ts.GetDescriptor();
    const Reflection* r = ts.GetReflection();
    const int64_t seconds = r->GetInt64(ts, d->FindFieldByName("seconds"));
    const int32_t nanos = r->GetInt32(ts, d->FindFieldByName("nanos"));
    if (seconds < kMinTimestampSeconds || seconds > kMaxTimestampSeconds) {
      p_.Add(absl::StrCat(Text(where), ": ", seconds,
                          " seconds is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z"));
    }
    if (nanos < 0 || nanos > 999'999'999) {
      p_.Add(absl::StrCat(Text(where), ": nanos ", nanos, " is outside 0..999999999"));
    }
  }

  absl::flat_hash_map<std::pair<const FieldLimits*, const FieldDescriptor*>, const FieldLimits*>
      children_;
  std::deque<FieldLimits> storage_;  // stable addresses
  const IngestLimits& limits_;
  Problems& p_;
};

}  // namespace

// Lists a real host can make long. Everything else: max_entries.
std::map<std::string, size_t, std::less<>> IngestLimits::DefaultEntryLimits() {
  return {
      {"posture.sessions.shares", 1'000},  // tree connects of one session
      {"posture.connections", 10'000},     // this host's client connections
      {"posture.multichannelConnections", 10'000},
      {"posture.nics", 256},
      {"posture.openFiles", 100'000},
      {"posture.benchmarks", 1'000},
      {"posture.compressionBenchmarks", 1'000},
      {"posture.probeErrors", 256},
      {"posture.probeErrors.sections", 32},
      {"posture.events.data", 128},  // named EventData fields of one event
      {"posture.server.encryptionCiphers", 32},
      {"posture.server.signingAlgorithms", 32},
      {"posture.client.encryptionCiphers", 32},
      {"posture.client.hardenedPaths", 1'000},
  };
}

// Strings with a bound of their own. Everything else: max_string_bytes.
std::map<std::string, size_t, std::less<>> IngestLimits::DefaultStringLimits() {
  return {
      {"reportId", 64},  // a UUID (checked apart)
      {"reason", 64},
      {"posture.host.hostname", 255},
      {"posture.host.fqdn", 255},
      {"posture.host.labels.key", 128},
      {"posture.host.labels.value", 1024},
      {"posture.sessions.sessionId", 64},
      {"posture.sessions.clientAddress", 255},
      {"posture.sessions.clientName", 255},
      {"posture.sessions.user", 512},
      {"posture.shares.securityDescriptor", 65'536},  // SDDL of a share with many entries
      {"posture.events.message", 32'768},             // rendered event text
      {"posture.openFiles.path", 32'768},
      {"posture.openFiles.shareRelativePath", 32'768},
  };
}

size_t IngestLimits::EntriesOf(absl::string_view key) const {
  if (key == "posture.shares") return max_shares;
  if (key == "posture.sessions") return max_sessions;
  if (key == "posture.events") return max_events;
  if (key == "posture.host.labels") return max_labels;
  auto it = entries.find(key);
  return it == entries.end() ? max_entries : it->second;
}

size_t IngestLimits::BytesOf(absl::string_view key) const {
  if (key == "posture.shares.name" || key == "posture.sessions.shares.name") {
    return max_share_name_bytes;
  }
  auto it = string_bytes.find(key);
  return it == string_bytes.end() ? max_string_bytes : it->second;
}

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
    p.Add(absl::StrCat("reportId: '", Utf8Prefix(request.report_id(), 64),
                       "' is not a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"));
  }
  if (!request.has_posture()) {
    if (request.posture_digest().empty()) {
      p.Add("posture: missing");
    } else if (!IsPostureDigest(request.posture_digest())) {
      p.Add(absl::StrCat("postureDigest: '", Utf8Prefix(request.posture_digest(), 64),
                         "' is not a posture digest (64 lower-case hex digits)"));
    } else {
      Walker(limits, &p).Walk(request, Where{}, nullptr);  // reason, collectedAt
    }
    return p.ToStatus();
  }
  for (int i = 0; i < request.posture().shares_size(); ++i) {
    if (request.posture().shares(i).name().empty()) {
      p.Add(absl::StrCat("posture.shares[", i, "].name: empty"));
    }
  }
  Walker(limits, &p).Walk(request, Where{}, nullptr);
  return p.ToStatus();
}

}  // namespace smbfleet::collector
