#include "agent/platform/windows/ps_json.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smbfleet::agent::windows {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

std::string Utf16Le(const std::string& ascii, bool bom) {
  std::string out = bom ? std::string("\xFF\xFE", 2) : "";
  for (char c : ascii) {
    out.push_back(c);
    out.push_back('\0');
  }
  return out;
}

TEST(DecodeTextTest, AllEncodingsGiveTheSameText) {
  const std::string text = R"({"Name":"Data"})";
  struct Case {
    const char* name;
    std::string bytes;
  };
  std::string be = "\xFE\xFF";
  for (char c : text) {
    be.push_back('\0');
    be.push_back(c);
  }
  std::vector<Case> cases = {
      {"utf8", text},
      {"utf8 bom", "\xEF\xBB\xBF" + text},
      {"utf16le bom", Utf16Le(text, true)},
      {"utf16le no bom", Utf16Le(text, false)},
      {"utf16be bom", be},
  };
  for (const auto& c : cases) {
    auto decoded = DecodeText(c.bytes, c.name);
    ASSERT_TRUE(decoded.ok()) << c.name << ": " << decoded.status();
    EXPECT_EQ(*decoded, text) << c.name;
  }
}

TEST(DecodeTextTest, Utf16SurrogatesAndNonAscii) {
  // "‘x’ 😀" in UTF-16LE with BOM.
  std::string bytes("\xFF\xFE\x18\x20x\x00\x19\x20 \x00\x3D\xD8\x00\xDE", 14);
  auto decoded = DecodeText(bytes, "t");
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, "\xE2\x80\x98x\xE2\x80\x99 \xF0\x9F\x98\x80");
}

TEST(DecodeTextTest, BrokenUtf16IsAnErrorNamingTheInput) {
  auto odd = DecodeText(std::string("\xFF\xFE{\x00\x22", 5), "Get-SmbShare.json");
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(odd.status().message(), HasSubstr("Get-SmbShare.json"));
  auto lone = DecodeText(std::string("\xFF\xFE\x00\xD8x\x00", 6), "f.json");
  ASSERT_FALSE(lone.ok());
  EXPECT_THAT(lone.status().message(), HasSubstr("surrogate"));
}

TEST(ParsePsObjectsTest, ShapesOfZeroOneAndMany) {
  struct Case {
    const char* input;
    size_t count;
  };
  std::vector<Case> cases = {
      {"", 0},
      {"  \r\n", 0},
      {"null", 0},
      {"[]", 0},
      {R"({"A":1})", 1},
      {R"([{"A":1}])", 1},
      {R"([{"A":1},{"A":2},{"A":3}])", 3},
  };
  for (const auto& c : cases) {
    auto objects = ParsePsObjects(c.input, "t");
    ASSERT_TRUE(objects.ok()) << c.input << ": " << objects.status();
    EXPECT_THAT(*objects, SizeIs(c.count)) << c.input;
  }
}

TEST(ParsePsObjectsTest, StripsCimNoiseAndLiftsInstanceProperties) {
  auto objects = ParsePsObjects(R"({
    "CimClass": {"CimSuperClassName": null},
    "CimInstanceProperties": [{"Name": "ShareType", "Value": 3}, {"Name": "Name", "Value": "x"}],
    "CimSystemProperties": {"ClassName": "MSFT_SmbShare"},
    "Name": "IPC$",
    "PSComputerName": null})",
                                "t");
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_THAT(*objects, SizeIs(1));
  const auto& o = (*objects)[0];
  EXPECT_FALSE(o.contains("CimClass"));
  EXPECT_FALSE(o.contains("CimInstanceProperties"));
  EXPECT_FALSE(o.contains("PSComputerName"));
  EXPECT_EQ(o["Name"], "IPC$");  // the real property wins over the lifted one
  EXPECT_EQ(o["ShareType"], 3);  // only present inside CimInstanceProperties
}

TEST(ParsePsObjectsTest, MalformedInputNamesFileAndPosition) {
  struct Case {
    const char* input;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"{\n  \"A\": tru\n}", "line 3"},  // where the lexer stopped: after the newline
      {"[{\"A\":1},", "line 1"},        {"{\"A\":1}}", "column"},
      {"42", "expected an object"},     {"[1, 2]", "[0]: expected an object"},
  };
  for (const auto& c : cases) {
    auto objects = ParsePsObjects(c.input, "Get-SmbSession.json");
    ASSERT_FALSE(objects.ok()) << c.input;
    EXPECT_THAT(objects.status().message(), HasSubstr("Get-SmbSession.json")) << c.input;
    EXPECT_THAT(objects.status().message(), HasSubstr(c.expect)) << c.input;
  }
}

TEST(PsObjectTest, TypedReadsAcceptPowerShellShapes) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "B1": true, "B2": "False", "B3": 1, "B4": "maybe",
    "N1": 18446744073709551557, "N2": "9007199254740993", "N3": -1, "N4": 12,
    "S1": "x", "S2": 5, "Nul": null,
    "L1": "AES_128_GCM, AES_256_GCM", "L2": ["a", "b, c"], "L3": "",
    "T1": "/Date(1764662400123)/", "T2": "\/Date(1764662400000+0100)\/",
    "T3": "2025-12-02T08:00:00.5Z", "T4": "yesterday",
    "lowercase": true})");
  std::vector<std::string> problems;
  PsObject o(j, "f.json[0]", &problems);
  EXPECT_EQ(o.Bool("B1"), true);
  EXPECT_EQ(o.Bool("B2"), false);
  EXPECT_EQ(o.Bool("B3"), true);
  EXPECT_EQ(o.Bool("B4"), std::nullopt);
  EXPECT_EQ(o.Bool("Missing"), std::nullopt);
  EXPECT_EQ(o.Bool("Nul"), std::nullopt);
  EXPECT_EQ(o.Bool("LOWERCASE"), true);  // PowerShell names are case-insensitive
  EXPECT_EQ(o.IdString("N1"), "18446744073709551557");
  EXPECT_EQ(o.IdString("N2"), "9007199254740993");
  EXPECT_EQ(o.Uint64("N3"), std::nullopt);
  EXPECT_EQ(o.Uint64("N4"), 12u);
  EXPECT_EQ(o.String("S1"), "x");
  EXPECT_EQ(o.String("S2"), "5");
  EXPECT_EQ(o.StringList("L1"), (std::vector<std::string>{"AES_128_GCM", "AES_256_GCM"}));
  EXPECT_EQ(o.StringList("L2"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o.StringList("L3"), std::vector<std::string>{});
  auto t1 = o.Time("T1");
  ASSERT_TRUE(t1.has_value());
  EXPECT_EQ(t1->seconds(), 1764662400);
  EXPECT_EQ(t1->nanos(), 123000000);
  EXPECT_EQ(o.Time("T2")->seconds(), 1764662400);  // the offset is display only
  auto t3 = o.Time("T3");
  ASSERT_TRUE(t3.has_value());
  EXPECT_EQ(t3->seconds(), 1764662400);
  EXPECT_EQ(t3->nanos(), 500000000);
  EXPECT_EQ(o.Time("T4"), std::nullopt);
  // Every wrong shape is reported with its place.
  ASSERT_THAT(problems, SizeIs(3));
  EXPECT_THAT(problems[0], HasSubstr("f.json[0].B4"));
  EXPECT_THAT(problems[1], HasSubstr("f.json[0].N3"));
  EXPECT_THAT(problems[2], HasSubstr("f.json[0].T4"));
}

TEST(ParsePsTimeTest, RefusesTimesATimestampCannotHold) {
  // Found by the ps_json fuzzer: absl::ParseTime reads "infinite-past", whose seconds are
  // INT64_MIN, and the nanosecond carry then overflowed (UBSan: signed integer overflow).
  for (const char* text :
       {"infinite-past", "infinite-future", "/Date(-62135596801000)/", "/Date(253402300800000)/",
        "/Date(-9223372036854775808)/", "0000-12-31T23:59:59Z", "10000-01-01T00:00:00Z"}) {
    EXPECT_EQ(ParsePsTime(text), std::nullopt) << text;
  }
  auto first = ParsePsTime("0001-01-01T00:00:00Z");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->seconds(), -62135596800);
  auto last = ParsePsTime("/Date(253402300799999)/");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->seconds(), 253402300799);
  EXPECT_EQ(last->nanos(), 999000000);
  auto before_epoch = ParsePsTime("1969-12-31T23:59:59.5Z");
  ASSERT_TRUE(before_epoch.has_value());
  EXPECT_EQ(before_epoch->seconds(), -1);
  EXPECT_EQ(before_epoch->nanos(), 500000000);
}

TEST(PsObjectTest, LargeIdsNeverGoThroughDouble) {
  // 2^53 + 1 is not representable as a double: a double round trip would print ...992.
  auto objects = ParsePsObjects(R"([{"SessionId": 9007199254740993}])", "t");
  ASSERT_TRUE(objects.ok());
  PsObject o((*objects)[0], "t", nullptr);
  EXPECT_EQ(o.IdString("SessionId"), "9007199254740993");
}

}  // namespace
}  // namespace smbfleet::agent::windows
