#include "collector/store/postgres/change_rows.h"

#include <functional>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "collector/store/postgres/sql.h"
#include "common/json.h"
#include "common/status_macros.h"

namespace smbfleet::collector::pg {
namespace {

namespace v1 = smbfleet::v1;

using Type = ColumnType;

std::string Int(int64_t n) { return absl::StrCat(n); }

std::string Bool(bool b) { return b ? "true" : "false"; }

// NULL for an unset timestamp.
std::optional<std::string> Time(const google::protobuf::Timestamp& ts) {
  std::string text = TimestampText(ts);
  if (text.empty()) return std::nullopt;
  return text;
}

// NULL for a text that is empty.
std::optional<std::string> OptionalText(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

// Leaves the timestamp unset (not even present) for NULL.
template <typename Mutable>
void SetTime(const pqxx::field& f, Mutable mutable_ts) {
  if (f.is_null()) return;
  SetTimestampFromMicros(f, mutable_ts());
}

// `m` as JSON; NULL for a message that is not set.
std::optional<std::string> Json(bool has, const google::protobuf::Message& m) {
  if (!has) return std::nullopt;
  if (m.ByteSizeLong() == 0) return "{}";  // protobuf's JSON printer is slow
  auto json = ToJson(m, /*pretty=*/false);
  return json.ok() ? *json : "{}";
}

// The value of the only field set in `holder` (`{"key":VALUE}` as protobuf prints it without
// whitespace), or `empty` when it is unset.
std::string FieldJson(const google::protobuf::Message& holder, absl::string_view key,
                      absl::string_view empty) {
  if (holder.ByteSizeLong() == 0) return std::string(empty);
  auto json = ToJson(holder, /*pretty=*/false);
  absl::string_view value = empty;
  if (json.ok()) {
    absl::string_view s = *json;
    if (absl::ConsumePrefix(&s, absl::StrCat("{\"", key, "\":")) && absl::ConsumeSuffix(&s, "}")) {
      value = s;
    }
  }
  return std::string(value);
}

// Reads a column written by FieldJson into `out`'s field `key`.
absl::Status MergeFieldJson(const pqxx::field& f, absl::string_view key, absl::string_view what,
                            google::protobuf::Message* out) {
  const std::string text = f.as<std::string>();
  if (text == "[]" || text == "{}") return absl::OkStatus();  // parsing costs even when empty
  std::unique_ptr<google::protobuf::Message> holder(out->New());
  RETURN_IF_ERROR(FromJson(absl::StrCat("{\"", key, "\":", text, "}"), std::string(what),
                           holder.get(), /*ignore_unknown=*/true));
  out->MergeFrom(*holder);
  return absl::OkStatus();
}

// A message column written by Json(); NULL leaves it unset.
template <typename Mutable>
absl::Status MessageFromJson(const pqxx::field& f, const std::string& what, Mutable mutable_msg) {
  if (f.is_null()) return absl::OkStatus();
  const std::string text = f.as<std::string>();
  google::protobuf::Message* msg = mutable_msg();  // present, even when empty
  if (text == "{}") return absl::OkStatus();
  return FromJson(text, what, msg, /*ignore_unknown=*/true);
}

// The `more` column into `out`, before the columns are set.
absl::Status MoreFromJson(const pqxx::field& f, const std::string& what,
                          google::protobuf::Message* out) {
  const std::string text = f.as<std::string>();
  if (text == "{}") return absl::OkStatus();
  return FromJson(text, what, out, /*ignore_unknown=*/true);
}

std::string EnumText(const std::string& name, absl::string_view prefix) {
  absl::string_view s = name;
  if (!absl::ConsumePrefix(&s, prefix) || s == "UNSPECIFIED") return "";
  return std::string(s);
}

std::string Str(const pqxx::field& f) { return f.is_null() ? "" : f.as<std::string>(); }

}  // namespace

namespace {

// How `param` (a text parameter or an element of a text[] one) is read as `type`.
std::string Read(ColumnType type, const std::string& param) {
  switch (type) {
    case Type::kText:
      return param;
    case Type::kBigint:
      return absl::StrCat(param, "::bigint");
    case Type::kBool:
      return absl::StrCat(param, "::bool");
    case Type::kTimestamptz:
      return absl::StrCat(param, "::timestamptz");
    case Type::kTimestamptzOrNow:
      return absl::StrCat("COALESCE(", param, "::timestamptz, now())");
    case Type::kJsonb:
      return absl::StrCat(param, "::jsonb");
    case Type::kHexBytea:
      return absl::StrCat("decode(", param, ", 'hex')");
  }
  return param;
}

}  // namespace

void RowValues::Add(std::string name, ColumnType type, std::optional<std::string> value) {
  columns.push_back({std::move(name), type, std::move(value)});
}

std::string RowValues::ExcludedAssignments(const std::vector<std::string>& key) const {
  std::vector<std::string> parts;
  for (const auto& c : columns) {
    if (std::find(key.begin(), key.end(), c.name) != key.end()) continue;
    parts.push_back(absl::StrCat(c.name, " = EXCLUDED.", c.name));
  }
  return absl::StrJoin(parts, ", ");
}

namespace {

// Column `c` of every row of `rows` as one text[] parameter (InsertRows, UpdateRows).
std::string ColumnArray(const std::vector<RowValues>& rows, size_t c) {
  std::vector<std::optional<std::string>> values;
  values.reserve(rows.size());
  for (const RowValues& r : rows) values.push_back(r.columns[c].value);
  return NullableTextArray(values);
}

}  // namespace

void InsertRows(pqxx::transaction_base& tx, const std::string& table,
                const std::vector<RowValues>& rows, const std::string& tail) {
  if (rows.empty()) return;
  const std::vector<RowValues::Column>& first = rows[0].columns;
  std::vector<std::string> names, reads, arrays, params;
  for (size_t c = 0; c < first.size(); ++c) {
    names.push_back(first[c].name);
    reads.push_back(Read(first[c].type, absl::StrCat("u.", first[c].name)));
    arrays.push_back(absl::StrCat("$", c + 1, "::text[]"));
    params.push_back(ColumnArray(rows, c));
  }
  tx.exec_params(
      absl::StrCat("INSERT INTO ", table, " (", absl::StrJoin(names, ", "), ") SELECT ",
                   absl::StrJoin(reads, ", "), " FROM unnest(", absl::StrJoin(arrays, ", "),
                   ") WITH ORDINALITY AS u(", absl::StrJoin(names, ", "),
                   ", row_order) ORDER BY u.row_order ", tail),
      pqxx::prepare::make_dynamic_params(params));
}

void UpdateRows(pqxx::transaction_base& tx, const std::string& table,
                const std::vector<RowValues>& rows, const std::vector<std::string>& keys) {
  if (rows.empty()) return;
  const std::vector<RowValues::Column>& first = rows[0].columns;
  std::vector<std::string> names, arrays, assignments, matches, params;
  for (size_t c = 0; c < first.size(); ++c) {
    const std::string& name = first[c].name;
    names.push_back(name);
    arrays.push_back(absl::StrCat("$", c + 1, "::text[]"));
    const std::string read = Read(first[c].type, absl::StrCat("u.", name));
    if (std::find(keys.begin(), keys.end(), name) != keys.end()) {
      matches.push_back(absl::StrCat("t.", name, " = ", read));
    } else {
      assignments.push_back(absl::StrCat(name, " = ", read));
    }
    params.push_back(ColumnArray(rows, c));
  }
  tx.exec_params(
      absl::StrCat("UPDATE ", table, " t SET ", absl::StrJoin(assignments, ", "), " FROM unnest(",
                   absl::StrJoin(arrays, ", "), ") AS u(", absl::StrJoin(names, ", "), ") WHERE ",
                   absl::StrJoin(matches, " AND ")),
      pqxx::prepare::make_dynamic_params(params));
}

void UpdateRow(pqxx::transaction_base& tx, const std::string& table, const RowValues& row,
               const std::vector<std::string>& skip, const std::string& where,
               const std::vector<std::string>& keys) {
  std::vector<std::optional<std::string>> params(keys.begin(), keys.end());
  std::vector<std::string> assignments;
  for (const auto& c : row.columns) {
    if (std::find(skip.begin(), skip.end(), c.name) != skip.end()) continue;
    params.push_back(c.value);
    assignments.push_back(
        absl::StrCat(c.name, " = ", Read(c.type, absl::StrCat("$", params.size(), "::text"))));
  }
  tx.exec_params(
      absl::StrCat("UPDATE ", table, " SET ", absl::StrJoin(assignments, ", "), " WHERE ", where),
      pqxx::prepare::make_dynamic_params(params));
}

std::string ChangeStateText(v1::ChangeState s) {
  return EnumText(v1::ChangeState_Name(s), "CHANGE_STATE_");
}

std::string HostStateText(v1::HostChangeState s) {
  return EnumText(v1::HostChangeState_Name(s), "HOST_CHANGE_STATE_");
}

std::string WaiverStateText(v1::WaiverState s) {
  return EnumText(v1::WaiverState_Name(s), "WAIVER_STATE_");
}

RowValues ChangeRow(const v1::Change& c) {
  // Fields 1-25, 28 and 29 have columns (or rows: hosts, approvals); whatever else Change has
  // (fields added later) goes to `more`. A field that gets a column is added to this list.
  v1::Change more = c;
  for (int field : {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14,
                    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 28, 29}) {
    more.GetReflection()->ClearField(&more, more.GetDescriptor()->FindFieldByNumber(field));
  }
  RowValues row;
  row.Add("id", Type::kText, c.id());
  row.Add("state", Type::kText, ChangeStateText(c.state()));
  row.Add("version", Type::kBigint, Int(static_cast<int64_t>(c.version())));
  row.Add("source", Type::kText, EnumText(v1::ChangeSource_Name(c.source()), "CHANGE_SOURCE_"));
  row.Add("rule_id", Type::kText, c.rule_id());
  v1::Change selector;
  *selector.mutable_label_selector() = c.label_selector();
  row.Add("label_selector", Type::kJsonb, FieldJson(selector, "labelSelector", "{}"));
  row.Add("reason", Type::kText, c.reason());
  row.Add("proposed_by", Type::kText, c.proposed_by());
  row.Add("proposed_at", Type::kTimestamptz, Time(c.proposed_at()));
  row.Add("updated_at", Type::kTimestamptz, Time(c.updated_at()));
  row.Add("not_after", Type::kTimestamptz, Time(c.not_after()));
  row.Add("content_hash", Type::kText, c.content_hash());
  row.Add("approvals_required", Type::kBigint, Int(c.approvals_required()));
  row.Add("rejected_by", Type::kText, c.rejected_by());
  row.Add("rollout", Type::kJsonb, Json(c.has_rollout(), c.rollout()));
  row.Add("current_wave", Type::kBigint, Int(c.current_wave()));
  row.Add("wave_count", Type::kBigint, Int(c.wave_count()));
  row.Add("halt_reason", Type::kText, c.halt_reason());
  row.Add("impact", Type::kJsonb, Json(c.has_impact(), c.impact()));
  row.Add("rollback_of", Type::kText, OptionalText(c.rollback_of()));
  row.Add("rolled_back_by", Type::kText, OptionalText(c.rolled_back_by()));
  row.Add("policy_name", Type::kText, c.policy_name());
  row.Add("policy_version", Type::kText, c.policy_version());
  row.Add("approval_nonce", Type::kText, c.approval_nonce());
  row.Add("requested_by", Type::kText, c.requested_by());
  row.Add("more", Type::kJsonb, Json(true, more));
  return row;
}

namespace {

// `print()`, the JSON of `column` for `m`, printed once per `cache`: equal serialized bytes are
// an equal message.
std::string PrintedOnce(HostJsonCache* cache, absl::string_view column,
                        const google::protobuf::Message& m,
                        const std::function<std::string()>& print) {
  if (cache == nullptr || m.ByteSizeLong() == 0) return print();  // an empty one costs nothing
  std::string key = absl::StrCat(column, std::string(1, '\0'), m.SerializeAsString());
  auto found = cache->printed.find(key);
  if (found != cache->printed.end()) return found->second;
  std::string json = print();
  if (cache->printed.size() < HostJsonCache::kMaxTexts)
    cache->printed.emplace(std::move(key), json);
  return json;
}

}  // namespace

RowValues ChangedColumns(const RowValues& was, const RowValues& now,
                         const std::vector<std::string>& keys) {
  RowValues out;
  for (size_t i = 0; i < now.columns.size(); ++i) {
    const RowValues::Column& c = now.columns[i];
    const bool key = std::find(keys.begin(), keys.end(), c.name) != keys.end();
    const bool same =
        i < was.columns.size() && was.columns[i].name == c.name && was.columns[i].value == c.value;
    if (key || !same) out.columns.push_back(c);
  }
  return out;
}

RowValues HostRow(const std::string& change_id, int position, const v1::ChangeHost& h,
                  bool with_counters, HostJsonCache* cache) {
  v1::ChangeHost steps, before, after, more = h;
  *steps.mutable_steps() = h.steps();
  *before.mutable_before() = h.before();
  *after.mutable_after() = h.after();
  // These have columns; the rest (rule ids, not remediable, labels, later fields) is `more`.
  for (int field : {1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}) {
    more.GetReflection()->ClearField(&more, more.GetDescriptor()->FindFieldByNumber(field));
  }
  RowValues row;
  row.Add("change_id", Type::kText, change_id);
  row.Add("host", Type::kText, h.host());
  row.Add("position", Type::kBigint, Int(position));
  row.Add("state", Type::kText, HostStateText(h.state()));
  row.Add("wave", Type::kBigint, Int(h.wave()));
  row.Add("dispatched_at", Type::kTimestamptz, Time(h.dispatched_at()));
  row.Add("finished_at", Type::kTimestamptz, Time(h.finished_at()));
  row.Add("message", Type::kText, h.message());
  row.Add("order_not_after", Type::kTimestamptz, Time(h.order_not_after()));
  row.Add("nonce", Type::kText, h.nonce());
  row.Add("rollback_sent", Type::kBool, Bool(h.rollback_sent()));
  row.Add("steps", Type::kJsonb,
          PrintedOnce(cache, "steps", steps, [&] { return FieldJson(steps, "steps", "[]"); }));
  row.Add("impact", Type::kJsonb,
          h.has_impact()
              ? std::optional<std::string>(PrintedOnce(cache, "impact", h.impact(),
                                                       [&] { return *Json(true, h.impact()); }))
              : std::nullopt);
  row.Add("before_values", Type::kJsonb, PrintedOnce(cache, "before_values", before, [&] {
            return FieldJson(before, "before", "[]");
          }));
  row.Add("after_values", Type::kJsonb, PrintedOnce(cache, "after_values", after, [&] {
            return FieldJson(after, "after", "[]");
          }));
  row.Add("more", Type::kJsonb,
          PrintedOnce(cache, "more", more, [&] { return *Json(true, more); }));
  if (with_counters) {
    for (RowValues::Column& c : HostCounterRow(h).columns) row.columns.push_back(std::move(c));
  }
  return row;
}

RowValues HostCounterRow(const v1::ChangeHost& h) {
  auto bytes = [](bool has, const v1::CounterWindow& w) -> std::optional<std::string> {
    if (!has) return std::nullopt;
    return absl::BytesToHexString(w.SerializeAsString());
  };
  RowValues row;
  row.Add("counters_before", Type::kHexBytea, bytes(h.has_counters_before(), h.counters_before()));
  row.Add("counters_after", Type::kHexBytea, bytes(h.has_counters_after(), h.counters_after()));
  row.Add("measured", Type::kJsonb, Json(h.has_measured(), h.measured()));
  return row;
}

RowValues ApprovalRow(const v1::Change& change, int position, const v1::ChangeApproval& a) {
  RowValues row;
  row.Add("change_id", Type::kText, change.id());
  row.Add("proposed_by", Type::kText, change.proposed_by());
  row.Add("approver", Type::kText, a.approver());
  row.Add("position", Type::kBigint, Int(position));
  row.Add("at", Type::kTimestamptz, Time(a.at()));
  row.Add("comment", Type::kText, a.comment());
  row.Add("key_id", Type::kText, a.key_id());
  row.Add("signature", Type::kHexBytea, absl::BytesToHexString(a.signature()));
  return row;
}

RowValues AuditRow(const v1::AuditEntry& e) {
  RowValues row;
  row.Add("at", Type::kTimestamptzOrNow, Time(e.at()));
  row.Add("actor", Type::kText, e.actor());
  row.Add("action", Type::kText, e.action());
  row.Add("change_id", Type::kText, e.change_id());
  row.Add("host", Type::kText, e.host());
  row.Add("waiver_id", Type::kText, e.waiver_id());
  row.Add("reason", Type::kText, e.reason());
  row.Add("content_hash", Type::kText, e.content_hash());
  row.Add("detail", Type::kText, e.detail());
  return row;
}

RowValues WaiverRow(const v1::Waiver& w) {
  RowValues row;
  row.Add("id", Type::kText, w.id());
  row.Add("rule_id", Type::kText, w.rule_id());
  row.Add("host_name", Type::kText, OptionalText(w.host()));
  row.Add("label_key", Type::kText, OptionalText(w.label_key()));
  row.Add("label_value", Type::kText, OptionalText(w.label_value()));
  row.Add("share_name", Type::kText, OptionalText(w.share()));
  row.Add("justification", Type::kText, w.justification());
  row.Add("approved_by", Type::kText, OptionalText(w.approved_by()));
  row.Add("created_by", Type::kText, w.created_by());
  row.Add("created_at", Type::kTimestamptzOrNow, Time(w.created_at()));
  row.Add("expires_at", Type::kTimestamptz, Time(w.expires_at()));
  row.Add("state", Type::kText, WaiverStateText(w.state()));
  row.Add("ticket", Type::kText, w.ticket());
  row.Add("approved_at", Type::kTimestamptz, Time(w.approved_at()));
  row.Add("revoked_by", Type::kText, w.revoked_by());
  row.Add("revoked_at", Type::kTimestamptz, Time(w.revoked_at()));
  row.Add("revoke_reason", Type::kText, w.revoke_reason());
  return row;
}

const char kChangeColumns[] = R"sql(
  c.id, c.state, c.version, c.source, c.rule_id, c.label_selector::text AS label_selector,
  c.reason, c.proposed_by,
  (EXTRACT(EPOCH FROM c.proposed_at) * 1000000)::bigint AS proposed_at,
  (EXTRACT(EPOCH FROM c.updated_at) * 1000000)::bigint AS updated_at,
  (EXTRACT(EPOCH FROM c.not_after) * 1000000)::bigint AS not_after,
  c.content_hash, c.approvals_required, c.rejected_by, c.rollout::text AS rollout,
  c.current_wave, c.wave_count, c.halt_reason, c.impact::text AS impact, c.rollback_of,
  c.rolled_back_by, c.policy_name, c.policy_version, c.approval_nonce, c.requested_by,
  c.more::text AS more
)sql";

const char kHostColumns[] = R"sql(
  h.change_id, h.host, h.state, h.wave,
  (EXTRACT(EPOCH FROM h.dispatched_at) * 1000000)::bigint AS dispatched_at,
  (EXTRACT(EPOCH FROM h.finished_at) * 1000000)::bigint AS finished_at,
  h.message,
  (EXTRACT(EPOCH FROM h.order_not_after) * 1000000)::bigint AS order_not_after,
  h.nonce, h.rollback_sent, h.steps::text AS steps, h.impact::text AS impact,
  h.before_values::text AS before_values, h.after_values::text AS after_values,
  h.more::text AS more
)sql";

const char kApprovalColumns[] = R"sql(
  a.change_id, a.approver, (EXTRACT(EPOCH FROM a.at) * 1000000)::bigint AS at, a.comment,
  a.key_id, encode(a.signature, 'hex') AS signature
)sql";

const char kAuditColumns[] = R"sql(
  l.seq, (EXTRACT(EPOCH FROM l.at) * 1000000)::bigint AS at, l.actor, l.action, l.change_id,
  l.host, l.waiver_id, l.reason, l.content_hash, l.detail
)sql";

const char kHostStatusColumns[] = R"sql(
  s.host, s.desired_change_id, s.desired_version, s.applied_change_id, s.applied_version,
  s.last_result, s.last_error, (EXTRACT(EPOCH FROM s.last_ack_at) * 1000000)::bigint AS last_ack_at
)sql";

const char kWaiverColumns[] = R"sql(
  w.id, w.rule_id, w.host_name, w.label_key, w.label_value, w.share_name, w.justification,
  w.approved_by, w.created_by,
  (EXTRACT(EPOCH FROM w.created_at) * 1000000)::bigint AS created_at,
  (EXTRACT(EPOCH FROM w.expires_at) * 1000000)::bigint AS expires_at,
  w.state, w.ticket, (EXTRACT(EPOCH FROM w.approved_at) * 1000000)::bigint AS approved_at,
  w.revoked_by, (EXTRACT(EPOCH FROM w.revoked_at) * 1000000)::bigint AS revoked_at,
  w.revoke_reason
)sql";

const char kHostCounterColumns[] = R"sql(
  encode(h.counters_before, 'hex') AS counters_before,
  encode(h.counters_after, 'hex') AS counters_after, h.measured::text AS measured
)sql";

absl::StatusOr<v1::Change> ChangeFromRow(const pqxx::row& r) {
  v1::Change c;
  const std::string id = r["id"].as<std::string>();
  const std::string what = absl::StrCat("change ", id);
  RETURN_IF_ERROR(MoreFromJson(r["more"], absl::StrCat(what, ", column more"), &c));
  c.set_id(id);
  v1::ChangeState state = v1::CHANGE_STATE_UNSPECIFIED;
  v1::ChangeState_Parse("CHANGE_STATE_" + r["state"].as<std::string>(), &state);
  c.set_state(state);
  c.set_version(r["version"].as<uint64_t>());
  v1::ChangeSource source = v1::CHANGE_SOURCE_UNSPECIFIED;
  v1::ChangeSource_Parse("CHANGE_SOURCE_" + r["source"].as<std::string>(), &source);
  c.set_source(source);
  c.set_rule_id(r["rule_id"].as<std::string>());
  RETURN_IF_ERROR(MergeFieldJson(r["label_selector"], "labelSelector",
                                 absl::StrCat(what, ", column label_selector"), &c));
  c.set_reason(r["reason"].as<std::string>());
  c.set_proposed_by(r["proposed_by"].as<std::string>());
  SetTime(r["proposed_at"], [&] { return c.mutable_proposed_at(); });
  SetTime(r["updated_at"], [&] { return c.mutable_updated_at(); });
  SetTime(r["not_after"], [&] { return c.mutable_not_after(); });
  c.set_content_hash(r["content_hash"].as<std::string>());
  c.set_approvals_required(r["approvals_required"].as<uint32_t>());
  c.set_rejected_by(r["rejected_by"].as<std::string>());
  RETURN_IF_ERROR(MessageFromJson(r["rollout"], absl::StrCat(what, ", column rollout"),
                                  [&] { return c.mutable_rollout(); }));
  c.set_current_wave(r["current_wave"].as<int32_t>());
  c.set_wave_count(r["wave_count"].as<int32_t>());
  c.set_halt_reason(r["halt_reason"].as<std::string>());
  RETURN_IF_ERROR(MessageFromJson(r["impact"], absl::StrCat(what, ", column impact"),
                                  [&] { return c.mutable_impact(); }));
  c.set_rollback_of(Str(r["rollback_of"]));
  c.set_rolled_back_by(Str(r["rolled_back_by"]));
  c.set_policy_name(r["policy_name"].as<std::string>());
  c.set_policy_version(r["policy_version"].as<std::string>());
  c.set_approval_nonce(r["approval_nonce"].as<std::string>());
  c.set_requested_by(r["requested_by"].as<std::string>());
  return c;
}

namespace {

// Merges into `out` what `column`'s `text` parses to: as `{"wrap_key":text}` into a fresh
// message like `out` (the whole message when `wrap_key` is empty), parsed once per `cache`.
// `what` names the row for errors.
absl::Status MergeParsed(const pqxx::row& r, absl::string_view column, absl::string_view wrap_key,
                         const std::string& text, HostJsonCache* cache,
                         google::protobuf::Message* out) {
  std::string key;
  if (cache != nullptr) {
    key = absl::StrCat(column, std::string(1, '\0'), text);
    auto found = cache->parsed.find(key);
    if (found != cache->parsed.end()) {
      out->MergeFrom(*found->second);
      return absl::OkStatus();
    }
  }
  std::unique_ptr<google::protobuf::Message> parsed(out->New());
  const std::string json =
      wrap_key.empty() ? text : absl::StrCat("{\"", wrap_key, "\":", text, "}");
  RETURN_IF_ERROR(FromJson(json,
                           absl::StrCat("change ", r["change_id"].as<std::string>(), ", host ",
                                        r["host"].c_str(), ", column ", column),
                           parsed.get(), /*ignore_unknown=*/true));
  out->MergeFrom(*parsed);
  if (cache != nullptr && cache->parsed.size() < HostJsonCache::kMaxTexts) {
    cache->parsed.emplace(std::move(key), std::move(parsed));
  }
  return absl::OkStatus();
}

// A column written by FieldJson (`wrap_key`) or, with an empty `wrap_key`, by Json(); `empty`
// is the text of an unset value.
absl::Status MergeHostColumn(const pqxx::row& r, const char* column, absl::string_view wrap_key,
                             HostJsonCache* cache, google::protobuf::Message* out) {
  const std::string text = r[column].as<std::string>();
  if (text == "[]" || text == "{}") return absl::OkStatus();  // parsing costs even when empty
  return MergeParsed(r, column, wrap_key, text, cache, out);
}

}  // namespace

absl::StatusOr<v1::ChangeHost> HostFromRow(const pqxx::row& r, HostJsonCache* cache) {
  v1::ChangeHost h;
  RETURN_IF_ERROR(MergeHostColumn(r, "more", "", cache, &h));
  h.set_host(r["host"].as<std::string>());
  v1::HostChangeState state = v1::HOST_CHANGE_STATE_UNSPECIFIED;
  v1::HostChangeState_Parse("HOST_CHANGE_STATE_" + r["state"].as<std::string>(), &state);
  h.set_state(state);
  h.set_wave(r["wave"].as<int32_t>());
  SetTime(r["dispatched_at"], [&] { return h.mutable_dispatched_at(); });
  SetTime(r["finished_at"], [&] { return h.mutable_finished_at(); });
  h.set_message(r["message"].as<std::string>());
  SetTime(r["order_not_after"], [&] { return h.mutable_order_not_after(); });
  h.set_nonce(r["nonce"].as<std::string>());
  h.set_rollback_sent(r["rollback_sent"].as<bool>());
  RETURN_IF_ERROR(MergeHostColumn(r, "steps", "steps", cache, &h));
  if (!r["impact"].is_null()) {
    v1::Impact* impact = h.mutable_impact();  // present, even when empty
    RETURN_IF_ERROR(MergeHostColumn(r, "impact", "", cache, impact));
  }
  RETURN_IF_ERROR(MergeHostColumn(r, "before_values", "before", cache, &h));
  RETURN_IF_ERROR(MergeHostColumn(r, "after_values", "after", cache, &h));
  return h;
}

absl::Status MergeHostCounters(const pqxx::row& r, v1::ChangeHost* h) {
  const std::string what = absl::StrCat("host ", r["host"].c_str());
  // NULL leaves the window unset (not even present).
  auto window = [&](const char* column, auto mutable_window) -> absl::Status {
    if (r[column].is_null()) return absl::OkStatus();
    if (!mutable_window()->ParseFromString(absl::HexStringToBytes(r[column].as<std::string>()))) {
      return absl::DataLossError(absl::StrCat(what, ", column ", column, ": not a CounterWindow"));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(window("counters_before", [&] { return h->mutable_counters_before(); }));
  RETURN_IF_ERROR(window("counters_after", [&] { return h->mutable_counters_after(); }));
  return MessageFromJson(r["measured"], absl::StrCat(what, ", column measured"),
                         [&] { return h->mutable_measured(); });
}

v1::ChangeApproval ApprovalFromRow(const pqxx::row& r) {
  v1::ChangeApproval a;
  a.set_approver(r["approver"].as<std::string>());
  SetTime(r["at"], [&] { return a.mutable_at(); });
  a.set_comment(r["comment"].as<std::string>());
  a.set_key_id(r["key_id"].as<std::string>());
  a.set_signature(absl::HexStringToBytes(r["signature"].as<std::string>()));
  return a;
}

v1::AuditEntry AuditFromRow(const pqxx::row& r) {
  v1::AuditEntry e;
  e.set_seq(r["seq"].as<int64_t>());
  SetTime(r["at"], [&] { return e.mutable_at(); });
  e.set_actor(r["actor"].as<std::string>());
  e.set_action(r["action"].as<std::string>());
  e.set_change_id(r["change_id"].as<std::string>());
  e.set_host(r["host"].as<std::string>());
  e.set_waiver_id(r["waiver_id"].as<std::string>());
  e.set_reason(r["reason"].as<std::string>());
  e.set_content_hash(r["content_hash"].as<std::string>());
  e.set_detail(r["detail"].as<std::string>());
  return e;
}

v1::HostChangeStatus HostStatusFromRow(const pqxx::row& r) {
  v1::HostChangeStatus s;
  s.set_desired_change_id(r["desired_change_id"].as<std::string>());
  s.set_desired_version(r["desired_version"].as<uint64_t>());
  s.set_applied_change_id(r["applied_change_id"].as<std::string>());
  s.set_applied_version(r["applied_version"].as<uint64_t>());
  v1::HostChangeState result = v1::HOST_CHANGE_STATE_UNSPECIFIED;
  const std::string text = r["last_result"].as<std::string>();
  if (!text.empty()) v1::HostChangeState_Parse("HOST_CHANGE_STATE_" + text, &result);
  s.set_last_result(result);
  s.set_last_error(r["last_error"].as<std::string>());
  SetTime(r["last_ack_at"], [&] { return s.mutable_last_ack_at(); });
  return s;
}

v1::Waiver WaiverFromRow(const pqxx::row& r) {
  v1::Waiver w;
  w.set_id(r["id"].as<std::string>());
  w.set_rule_id(r["rule_id"].as<std::string>());
  w.set_host(Str(r["host_name"]));
  w.set_label_key(Str(r["label_key"]));
  w.set_label_value(Str(r["label_value"]));
  w.set_share(Str(r["share_name"]));
  w.set_justification(r["justification"].as<std::string>());
  w.set_approved_by(Str(r["approved_by"]));
  w.set_created_by(r["created_by"].as<std::string>());
  SetTime(r["created_at"], [&] { return w.mutable_created_at(); });
  SetTime(r["expires_at"], [&] { return w.mutable_expires_at(); });
  v1::WaiverState state = v1::WAIVER_STATE_UNSPECIFIED;
  v1::WaiverState_Parse("WAIVER_STATE_" + r["state"].as<std::string>(), &state);
  w.set_state(state);
  w.set_ticket(r["ticket"].as<std::string>());
  SetTime(r["approved_at"], [&] { return w.mutable_approved_at(); });
  w.set_revoked_by(r["revoked_by"].as<std::string>());
  SetTime(r["revoked_at"], [&] { return w.mutable_revoked_at(); });
  w.set_revoke_reason(r["revoke_reason"].as<std::string>());
  return w;
}

}  // namespace smbfleet::collector::pg
