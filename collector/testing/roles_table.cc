#include "collector/testing/roles_table.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace smbfleet::collector::testing {
namespace {

// "| a | `b` |" -> {"a", "b"}
std::vector<std::string> Cells(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  absl::ConsumePrefix(&line, "|");
  absl::ConsumeSuffix(&line, "|");
  std::vector<std::string> cells;
  for (absl::string_view cell : absl::StrSplit(line, '|')) {
    cell = absl::StripAsciiWhitespace(cell);
    absl::ConsumePrefix(&cell, "`");
    absl::ConsumeSuffix(&cell, "`");
    cells.emplace_back(cell);
  }
  return cells;
}

}  // namespace

const std::vector<std::string>& RolesTableColumns() {
  static const auto* columns = new std::vector<std::string>{
      "viewer", "proposer", "approver", "admin", "no role", "agent", "anonymous"};
  return *columns;
}

absl::StatusOr<std::vector<RolesTableRow>> ParseRolesTable(absl::string_view markdown) {
  std::vector<std::string> header = {"RPC", "permission"};
  for (const std::string& c : RolesTableColumns()) header.push_back(c);
  std::vector<RolesTableRow> rows;
  bool in_table = false;
  int n = 0;
  for (absl::string_view line : absl::StrSplit(markdown, '\n')) {
    ++n;
    absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (!in_table) {
      in_table = absl::StartsWith(trimmed, "|") && Cells(trimmed) == header;
      continue;
    }
    if (!absl::StartsWith(trimmed, "|")) break;  // the table ended
    if (absl::StartsWith(trimmed, "|--") || absl::StartsWith(trimmed, "| --")) continue;
    std::vector<std::string> cells = Cells(trimmed);
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat("docs/roles.md:", n, ": ", cells.size(),
                                                     " cells, the header has ", header.size()));
    }
    RolesTableRow row{cells[0], cells[1], {}};
    for (size_t i = 2; i < cells.size(); ++i) {
      if (cells[i] != "yes" && cells[i] != "no") {
        return absl::InvalidArgumentError(absl::StrCat("docs/roles.md:", n, ": column '", header[i],
                                                       "' is '", cells[i],
                                                       "', expected yes or no"));
      }
      row.allowed[header[i]] = cells[i] == "yes";
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("docs/roles.md: no table with the header | ",
                                                   absl::StrJoin(header, " | "), " |"));
  }
  return rows;
}

absl::StatusOr<std::vector<RolesTableRow>> LoadRolesTable() {
  const std::string path = absl::StrCat(SMBFLEET_SOURCE_DIR, "/docs/roles.md");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseRolesTable(text.str());
}

}  // namespace smbfleet::collector::testing
