#include "common/logging.h"

#include <algorithm>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"

namespace smbfleet {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(LogSafeTest, AForgedLineStaysInsideItsField) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  spdlog::logger log("log_safe_test", sink);
  log.set_pattern("%l %v");
  log.info("watch stream opened (agent {})",
           LogSafe("1.0\n2026-12-03T10:00:00.000+0000 info [collector] admin approved c-9"));
  log.flush();
  std::string text = captured.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_THAT(text, HasSubstr("(agent \"1.0\\x0a2026-12-03T10:00:00.000+0000 info"));
}

TEST(LogSafeTest, PlainTokensStayBareAndEverythingElseIsQuoted) {
  EXPECT_EQ(LogSafe("fs01.corp.example"), "fs01.corp.example");
  EXPECT_EQ(LogSafe("0f8fad5b-d9cb-469f-a165-70867728950e"),
            "0f8fad5b-d9cb-469f-a165-70867728950e");
  EXPECT_EQ(LogSafe("1.4.0+build/7"), "1.4.0+build/7");
  EXPECT_EQ(LogSafe(""), "\"\"");
  EXPECT_EQ(LogSafe("fs01 admin"), "\"fs01 admin\"");  // a space would split the field
  EXPECT_EQ(LogSafe("fs01\""), "\"fs01\\\"\"");
  EXPECT_EQ(LogSafe("Z\xc3\xbcrich"), "\"Z\xc3\xbcrich\"");
}

TEST(LogSafeTest, CapsLongFieldsAndErrors) {
  EXPECT_EQ(LogSafe(std::string(1000, 'a')).size(),
            kLogFieldMaxBytes + 2 + std::string("...(744 more bytes)").size());
  std::string error = LogSafe(absl::InvalidArgumentError("labels[\"x\ny\"]: too long"));
  EXPECT_EQ(error, "\"labels[\\\"x\\x0ay\\\"]: too long\"");
  EXPECT_THAT(LogSafe(absl::UnknownError(std::string(5000, 'e'))), HasSubstr("more bytes"));
  EXPECT_THAT(LogSafe("\xe2\x80\xae"), Not(HasSubstr("\xe2\x80\xae")));
}

}  // namespace
}  // namespace smbfleet
