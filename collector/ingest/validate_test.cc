#include "collector/ingest/validate.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace smbfleet::collector {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using ::testing::HasSubstr;
using ::testing::Not;

smbfleet::v1::ReportRequest Valid() {
  smbfleet::v1::ReportRequest r;
  r.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
  r.mutable_posture()->mutable_host()->set_hostname("fs01");
  r.mutable_posture()->add_shares()->set_name("data");
  return r;
}

TEST(ValidateReportTest, AcceptsValid) { EXPECT_TRUE(ValidateReport(Valid()).ok()); }

TEST(ValidateReportTest, RejectsBadReportId) {
  auto r = Valid();
  r.set_report_id("'; DROP TABLE hosts; --");
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("reportId"));
}

TEST(ValidateReportTest, NamesOversizedShareName) {
  auto r = Valid();
  r.mutable_posture()->add_shares()->set_name(std::string(300, 'x'));
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.shares[1].name: 300 bytes, limit 255"));
}

TEST(ValidateReportTest, ListsSeveralProblems) {
  auto r = Valid();
  r.set_report_id("x");
  r.mutable_posture()->add_shares();  // empty name
  auto s = ValidateReport(r);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("reportId"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.shares[1].name: empty"));
}

TEST(ValidateReportTest, CountersAroundChangesNeverFailAReport) {
  // Longer than any list limit, a timestamp no validator would take: the change workflow checks
  // counters and drops what is wrong, the report is taken.
  auto r = Valid();
  auto* c = r.add_change_counters();
  c->set_change_id(std::string(5000, 'c'));
  for (int i = 0; i < 3000; ++i) c->mutable_after()->add_samples()->mutable_at()->set_seconds(-1);
  EXPECT_TRUE(ValidateReport(r).ok());
}

TEST(ValidateReportTest, MissingPosture) {
  smbfleet::v1::ReportRequest r;
  r.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
  EXPECT_THAT(std::string(ValidateReport(r).message()), HasSubstr("posture: missing"));
}

// A U+0000 anywhere (jsonb and text refuse it) is refused before the store, naming the field.
TEST(ValidateReportTest, NamesEveryStringWithUPlus0000) {
  const std::string nul("a\0b", 3);
  struct Case {
    std::function<void(smbfleet::v1::Posture*)> poison;
    const char* field;
  };
  const Case cases[] = {
      {[&](auto* p) {
         for (int i = 0; i < 3; ++i) p->add_shares()->set_name("s");
         p->mutable_shares(3)->set_name(nul);
       },
       "posture.shares[3].name: contains U+0000"},
      {[&](auto* p) { p->add_sessions()->add_shares()->set_name(nul); },
       "posture.sessions[0].shares[0].name: contains U+0000"},
      {[&](auto* p) { (*p->mutable_host()->mutable_labels())["site"] = nul; },
       "posture.host.labels[site]: contains U+0000"},
      {[&](auto* p) { (*p->mutable_host()->mutable_labels())[nul] = "x"; },
       "posture.host.labels[a"},  // the key as sent (the log escapes it)
      {[&](auto* p) { (*p->add_events()->mutable_data())["Status"] = nul; },
       "posture.events[0].data[Status]: contains U+0000"},
      {[&](auto* p) { (*p->mutable_server()->mutable_raw())["x"] = nul; },
       "posture.server.raw[x]: contains U+0000"},
      {[&](auto* p) { p->mutable_server()->add_null_session_pipes(nul); },
       "posture.server.nullSessionPipes[0]: contains U+0000"},
      {[&](auto* p) { p->add_probe_errors()->set_message(nul); },
       "posture.probeErrors[0].message: contains U+0000"},
      {[&](auto* p) { p->mutable_host()->mutable_cpu()->set_model(nul); },
       "posture.host.cpu.model: contains U+0000"},
      {[&](auto* p) { p->add_open_files()->set_path(nul); },
       "posture.openFiles[0].path: contains U+0000"},
  };
  for (const Case& c : cases) {
    auto r = Valid();
    c.poison(r.mutable_posture());
    auto s = ValidateReport(r);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.field << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.field));
  }
  auto r = Valid();
  r.set_reason(nul);
  EXPECT_THAT(std::string(ValidateReport(r).message()), HasSubstr("reason: contains U+0000"));
}

// In-process callers (and a parser that does not check) can hand over bytes that are not
// UTF-8; PostgreSQL refuses them.
TEST(ValidateReportTest, NamesStringsThatAreNotUtf8) {
  auto r = Valid();
  r.mutable_posture()->add_sessions()->set_user("\xc3\x28");
  r.mutable_posture()->mutable_host()->set_os_name("\xed\xa0\x80");
  auto s = ValidateReport(r);
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.sessions[0].user: not UTF-8"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("posture.host.osName: not UTF-8"));
}

TEST(ValidateReportTest, NamesTimestampsOutsideYears1To9999) {
  constexpr int64_t kFirst = -62'135'596'800;  // 0001-01-01T00:00:00Z
  constexpr int64_t kLast = 253'402'300'799;   // 9999-12-31T23:59:59Z
  auto edge = Valid();
  edge.mutable_posture()->mutable_collected_at()->set_seconds(kLast);
  edge.mutable_posture()->mutable_collected_at()->set_nanos(999'999'999);
  edge.mutable_posture()->add_events()->mutable_time()->set_seconds(kFirst);
  EXPECT_TRUE(ValidateReport(edge).ok()) << ValidateReport(edge);

  auto r = Valid();
  r.mutable_posture()->mutable_collected_at()->set_seconds(kLast + 1);
  r.mutable_posture()->add_events();
  r.mutable_posture()->add_events()->mutable_time()->set_seconds(kFirst - 1);
  r.mutable_posture()
      ->mutable_shares(0)
      ->mutable_compressibility()
      ->mutable_measured_at()
      ->set_nanos(-1);
  r.mutable_posture()->add_sessions()->add_shares()->mutable_connected_at()->set_nanos(
      1'000'000'000);
  auto s = ValidateReport(r);
  ASSERT_TRUE(absl::IsInvalidArgument(s)) << s;
  const std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("posture.collectedAt: 253402300800 seconds is outside"));
  EXPECT_THAT(m, HasSubstr("posture.events[1].time: -62135596801 seconds is outside"));
  EXPECT_THAT(m, HasSubstr("posture.shares[0].compressibility.measuredAt: nanos -1"));
  EXPECT_THAT(m, HasSubstr("posture.sessions[0].shares[0].connectedAt: nanos 1000000000"));
  EXPECT_THAT(m, Not(HasSubstr("events[0]")));
}

// Every list and map of the report, found by walking the schema: one over its limit is
// refused naming it; one at its limit is accepted. A new repeated field is covered here
// without an edit (a default limit applies to it).
struct ListField {
  std::string key;                            // "posture.sessions.shares"
  std::string path;                           // "posture.sessions[0].shares"
  std::vector<const FieldDescriptor*> chain;  // from ReportRequest down to the list
};

// The lists and maps (`lists`) and the strings (`strings`) of the schema under d. Map keys
// and values are left to the tests that name them.
void CollectFields(const Descriptor* d, const ListField& parent, std::vector<ListField>* lists,
                   std::vector<ListField>* strings) {
  if (parent.chain.size() > 6 || d->full_name() == "google.protobuf.Timestamp") return;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    // Counters around changes are checked by the change workflow, never by report validation
    // (CountersAroundChangesNeverFailAReport).
    if (parent.chain.empty() && f->name() == "change_counters") continue;
    ListField here = parent;
    here.key = parent.key.empty() ? f->json_name() : absl::StrCat(parent.key, ".", f->json_name());
    here.path =
        parent.path.empty() ? f->json_name() : absl::StrCat(parent.path, ".", f->json_name());
    here.chain.push_back(f);
    if (f->is_repeated()) lists->push_back(here);
    if (f->is_map()) continue;
    if (f->is_repeated()) here.path += "[0]";
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING && here.key != "reportId") {
      strings->push_back(here);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      CollectFields(f->message_type(), here, lists, strings);
    }
  }
}

// Adds n entries to the list at the end of `chain`, creating one parent at each level.
void Fill(Message* m, const std::vector<const FieldDescriptor*>& chain, size_t level, size_t n) {
  const Reflection* r = m->GetReflection();
  const FieldDescriptor* f = chain[level];
  if (level + 1 < chain.size()) {
    Message* child = f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f);
    if (child->GetDescriptor() == smbfleet::v1::Share::descriptor()) {
      static_cast<smbfleet::v1::Share*>(child)->set_name("s");
    }
    Fill(child, chain, level + 1, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        Message* e = r->AddMessage(m, f);
        if (f->is_map()) {
          e->GetReflection()->SetString(e, f->message_type()->map_key(), absl::StrCat("k", i));
        } else if (e->GetDescriptor() == smbfleet::v1::Share::descriptor()) {
          static_cast<smbfleet::v1::Share*>(e)->set_name(absl::StrCat("s", i));
        }
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING:
        r->AddString(m, f, "x");
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        r->AddEnumValue(m, f, 1);
        break;
      default:
        ADD_FAILURE() << f->full_name() << ": teach this test to fill its type";
        return;
    }
  }
}

// Sets the string at the end of `chain` to `value`, creating one parent at each level.
void SetString(Message* m, const std::vector<const FieldDescriptor*>& chain, size_t level,
               const std::string& value) {
  const Reflection* r = m->GetReflection();
  const FieldDescriptor* f = chain[level];
  if (level + 1 < chain.size()) {
    Message* child = f->is_repeated() ? r->AddMessage(m, f) : r->MutableMessage(m, f);
    if (child->GetDescriptor() == smbfleet::v1::Share::descriptor() &&
        chain[level + 1]->name() != "name") {
      static_cast<smbfleet::v1::Share*>(child)->set_name("s");
    }
    SetString(child, chain, level + 1, value);
  } else if (f->is_repeated()) {
    r->AddString(m, f, value);
  } else {
    r->SetString(m, f, value);
  }
}

// A report with `fill(n)` applied is accepted at n = limit and refused at limit + 1, the error
// naming the field's path, the size and the limit in `unit`.
void ExpectLimit(const ListField& field, size_t limit, const char* unit,
                 const std::function<void(smbfleet::v1::ReportRequest*, size_t)>& fill) {
  SCOPED_TRACE(field.key);
  ASSERT_GT(limit, 0u);
  for (size_t n : {limit, limit + 1}) {
    smbfleet::v1::ReportRequest r;
    r.set_report_id("0f8fad5b-d9cb-469f-a165-70867728950e");
    r.mutable_posture();
    fill(&r, n);
    auto s = ValidateReport(r);
    if (n == limit) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_TRUE(absl::IsInvalidArgument(s));
      EXPECT_THAT(std::string(s.message()),
                  HasSubstr(absl::StrCat(field.path, ": ", n, " ", unit, ", limit ", limit)));
    }
  }
}

// Every list, map and string of the report, found by walking the schema.
TEST(ValidateReportTest, EveryListAndStringHasALimitThatNamesIt) {
  std::vector<ListField> lists, strings;
  CollectFields(smbfleet::v1::ReportRequest::descriptor(), {}, &lists, &strings);
  ASSERT_GE(lists.size(), 20u);    // the walk found the schema's lists
  ASSERT_GE(strings.size(), 50u);  // and its strings
  const IngestLimits limits;
  for (const ListField& list : lists) {
    ExpectLimit(list, limits.EntriesOf(list.key), "entries",
                [&](smbfleet::v1::ReportRequest* r, size_t n) { Fill(r, list.chain, 0, n); });
  }
  for (const ListField& field : strings) {
    ExpectLimit(field, limits.BytesOf(field.key), "bytes",
                [&](smbfleet::v1::ReportRequest* r, size_t n) {
                  SetString(r, field.chain, 0, std::string(n, 'x'));
                });
  }
}

// The lists the collector used to leave unbounded have limits a real host stays under.
TEST(ValidateReportTest, ListsThatHadNoLimitHaveOne) {
  const IngestLimits limits;
  for (const char* key :
       {"posture.connections", "posture.multichannelConnections", "posture.nics",
        "posture.openFiles", "posture.benchmarks", "posture.probeErrors", "posture.sessions.shares",
        "posture.compressionBenchmarks", "posture.events.data"}) {
    EXPECT_LT(limits.EntriesOf(key), 1'000'000u) << key;
  }
  EXPECT_EQ(limits.EntriesOf("posture.shares"), 10'000u);
  EXPECT_EQ(limits.EntriesOf("posture.somethingNew"), limits.max_entries);
  EXPECT_EQ(limits.BytesOf("posture.somethingNew"), limits.max_string_bytes);
}

TEST(ValidateReportTest, EveryStringHasALimit) {
  auto r = Valid();
  r.mutable_posture()->add_probe_errors()->set_code(std::string(4097, 'c'));
  r.mutable_posture()->mutable_host()->set_samba_version(std::string(4097, 'v'));
  auto s = ValidateReport(r);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("posture.probeErrors[0].code: 4097 bytes, limit 4096"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("posture.host.sambaVersion: 4097 bytes, limit 4096"));
}

TEST(IsUuidTest, Shapes) {
  EXPECT_TRUE(IsUuid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
  EXPECT_FALSE(IsUuid("0f8fad5bd9cb469fa16570867728950e"));
  EXPECT_FALSE(IsUuid("0f8fad5b-d9cb-469f-a165-70867728950g"));
}

}  // namespace
}  // namespace smbfleet::collector
