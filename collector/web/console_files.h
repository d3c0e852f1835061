#ifndef SMBFLEET_COLLECTOR_WEB_CONSOLE_FILES_H_
#define SMBFLEET_COLLECTOR_WEB_CONSOLE_FILES_H_

// The console's front end, embedded in the binary at build time (embed_console.cmake: the
// output of `console/build.sh`, or a placeholder page saying how to build it).

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace smbfleet::collector {

struct EmbeddedFile {
  absl::string_view path;  // relative, '/'-separated: "index.html", "assets/app.js"
  absl::string_view content;
};

absl::Span<const EmbeddedFile> ConsoleFiles();

}  // namespace smbfleet::collector

#endif  // SMBFLEET_COLLECTOR_WEB_CONSOLE_FILES_H_
