#ifndef SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CMDLINE_H_
#define SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CMDLINE_H_

// Windows has no argv at the OS boundary: CreateProcess takes one command line that the child
// splits again (CommandLineToArgvW rules). Quoting each argument so that it splits back to exactly
// itself keeps "argv only, nothing interpolated" true on Windows. Plain C++, no Windows headers:
// compiled into the shim and unit-tested on any platform.

#include <string>
#include <vector>

namespace smbfleet::agent::windows::shim {

// Quotes one argument for CommandLineToArgvW / the MSVC runtime: wraps in quotes when it is
// empty or has space, tab, newline or a quote; doubles backslashes that precede a quote or the
// closing quote; escapes quotes.
inline std::string QuoteArgument(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n\v\"") == std::string::npos) return arg;
  std::string out = "\"";
  size_t backslashes = 0;
  for (char c : arg) {
    if (c == '\\') {
      ++backslashes;
      continue;
    }
    if (c == '"') {
      out.append(backslashes * 2 + 1, '\\');
    } else {
      out.append(backslashes, '\\');
    }
    backslashes = 0;
    out.push_back(c);
  }
  out.append(backslashes * 2, '\\');
  out.push_back('"');
  return out;
}

inline std::string BuildCommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) line.push_back(' ');
    line += QuoteArgument(argv[i]);
  }
  return line;
}

// The inverse, as CommandLineToArgvW splits (for tests on platforms without it).
inline std::vector<std::string> SplitCommandLine(const std::string& line) {
  std::vector<std::string> args;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    std::string arg;
    bool quoted = false;
    while (i < line.size()) {
      char c = line[i];
      if (c == '\\') {
        size_t n = 0;
        while (i < line.size() && line[i] == '\\') {
          ++n;
          ++i;
        }
        if (i < line.size() && line[i] == '"') {
          arg.append(n / 2, '\\');
          if (n % 2 == 1) {
            arg.push_back('"');
            ++i;
          }
        } else {
          arg.append(n, '\\');
        }
        continue;
      }
      if (c == '"') {
        if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
          arg.push_back('"');  // "" inside quotes
          i += 2;
          continue;
        }
        quoted = !quoted;
        ++i;
        continue;
      }
      if (!quoted && (c == ' ' || c == '\t')) break;
      arg.push_back(c);
      ++i;
    }
    args.push_back(arg);
  }
  return args;
}

}  // namespace smbfleet::agent::windows::shim

#endif  // SMBFLEET_AGENT_PLATFORM_WINDOWS_SHIM_CMDLINE_H_
