// Writes report_request's seed corpus: real postures, as the agent builds them from the Windows
// capture fixtures and the Samba fixtures, wrapped in ReportRequests and serialised
// deterministically. Not a test; run after changing a fixture:
//   build/tests/fuzz/fuzz_report_request_seeds SOURCE_DIR tests/fuzz/report_request/corpus

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/platform/samba/smbstatus_parser.h"
#include "agent/platform/samba/testparm_parser.h"
#include "agent/platform/windows/events.h"
#include "agent/platform/windows/parsers.h"
#include "collector/ingest/validate.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "smbfleet/v1/agent.pb.h"

namespace {

namespace v1 = ::smbfleet::v1;
namespace windows = ::smbfleet::agent::windows;
namespace samba = ::smbfleet::agent::samba;

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

v1::Posture WindowsPosture(const std::string& dir) {
  v1::Posture posture;
  std::vector<std::string> problems;
  for (const windows::ProbeSpec& probe : windows::WindowsProbes()) {
    std::string bytes;
    if (!ReadFile(absl::StrCat(dir, "/", probe.file), &bytes)) continue;
    (void)probe.parse(bytes, probe.file, &posture, &problems);
  }
  std::string events;
  if (ReadFile(dir + "/events.json", &events)) {
    auto parsed = windows::ParseEvents(events, "events.json", &problems);
    if (parsed.ok()) {
      for (auto& event : *parsed) *posture.add_events() = std::move(event);
    }
  }
  windows::FinishPosture(&posture);
  return posture;
}

v1::Posture SambaPosture(const std::string& prefix) {
  v1::Posture posture;
  posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  posture.mutable_host()->set_hostname("samba-lab");
  std::map<std::string, std::string> share_paths;
  std::string text;
  if (ReadFile(prefix + ".testparm.txt", &text)) {
    auto config = samba::TestparmConfig::Parse(text);
    if (config.ok()) {
      samba::FillConfig(*config, &posture);
      for (const auto& s : posture.shares()) share_paths[s.name()] = s.path();
    }
  }
  if (ReadFile(prefix + ".smbstatus.json", &text)) {
    auto status = samba::ParseSmbStatusJson(text, share_paths);
    if (status.ok()) {
      posture.mutable_host()->set_samba_version(status->version);
      for (auto& session : status->sessions) *posture.add_sessions() = std::move(session);
      for (auto& file : status->open_files) *posture.add_open_files() = std::move(file);
    }
  }
  return posture;
}

bool Write(const std::string& path, int n, const v1::Posture& posture) {
  v1::ReportRequest request;
  request.set_report_id(
      absl::StrCat("00000000-0000-4000-8000-", std::string(12 - 2, '0'), n < 10 ? "0" : "", n));
  request.set_reason("schedule");
  *request.mutable_posture() = posture;
  request.mutable_posture()->mutable_collected_at()->set_seconds(1764660600);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.SerializeToCodedStream(&coded);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  // Seeds the collector would store reach the digest; say which ones it refuses.
  absl::Status valid = smbfleet::collector::ValidateReport(request);
  std::printf("%s: %zu bytes, %s\n", path.c_str(), bytes.size(),
              valid.ok() ? "valid" : std::string(valid.message()).c_str());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const std::string corpus = argv[2];
  int n = 0;
  bool ok = true;
  for (const char* build : {"ws2016", "ws2019", "ws2022", "ws2022-nas-client", "ws2025"}) {
    ok &= Write(absl::StrCat(corpus, "/seed-windows-", build, ".pb"), ++n,
                WindowsPosture(absl::StrCat(root, "/tests/fixtures/windows/", build)));
  }
  for (const char* lab : {"cis-hardened", "cis-legacy", "mixed", "smb1-unsigned",
                          "encrypted-aes256gcm", "share-encrypted", "idle"}) {
    ok &= Write(absl::StrCat(corpus, "/seed-samba-", lab, ".pb"), ++n,
                SambaPosture(absl::StrCat(root, "/tests/fixtures/samba/", lab)));
  }
  return ok ? 0 : 1;
}
