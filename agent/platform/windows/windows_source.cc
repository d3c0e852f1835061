#include "agent/platform/windows/windows_source.h"

#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "agent/core/probe_errors.h"
#include "agent/core/session_rtt.h"
#include "agent/platform/windows/events.h"
#include "agent/platform/windows/parsers.h"
#include "agent/platform/windows/ps_json.h"
#include "agent/platform/windows/tcp_estats.h"
#include "common/files.h"
#include "common/version.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

namespace v1 = ::smbfleet::v1;

constexpr size_t kMaxCaptureFileBytes = 64 << 20;
constexpr size_t kMaxProblemsPerProbe = 20;

constexpr Probe kEventsProbe{"events", {v1::POSTURE_SECTION_EVENTS}};
constexpr Probe kCaptureProbe{"capture", {}};

// A probe named in capture.json's Errors: a cmdlet of WindowsProbes(), else unknown sections.
Probe ProbeNamed(absl::string_view name) {
  for (const ProbeSpec& spec : WindowsProbes()) {
    if (spec.probe == name) return spec.id();
  }
  // The capture script names event failures "events:<channel>".
  if (absl::StartsWith(name, kEventsProbe.name)) return Probe{name, kEventsProbe.sections};
  return Probe{name, {}};
}

void AddProblems(v1::Posture* posture, const Probe& probe,
                 const std::vector<std::string>& problems) {
  for (size_t i = 0; i < problems.size() && i < kMaxProblemsPerProbe; ++i) {
    AddProbeError(posture, probe, "PARSE", problems[i]);
  }
  if (problems.size() > kMaxProblemsPerProbe) {
    AddProbeError(
        posture, probe, "PARSE",
        absl::StrCat(problems.size() - kMaxProblemsPerProbe, " more problems not listed"));
  }
}

google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp ts;
  int64_t nanos = absl::ToUnixNanos(t);
  ts.set_seconds(nanos / 1000000000);
  ts.set_nanos(static_cast<int32_t>(nanos % 1000000000));
  return ts;
}

std::string BookmarkPath(const WindowsOptions& options) {
  return options.state_dir.empty() ? "" : options.state_dir + "/events-bookmark.json";
}

// Applies the per-report bound and the bookmark, and records the outcome in the posture. Returns
// the bookmark advanced past these events, for CommitBookmark once the report holding them is
// durable (nothing without a state directory).
std::optional<EventBookmark> SelectEvents(const WindowsOptions& options,
                                          std::vector<v1::Event> events,
                                          const std::map<std::string, uint64_t>& latest,
                                          v1::Posture* posture) {
  std::string path = BookmarkPath(options);
  EventBookmark bookmark;
  if (!path.empty()) {
    auto loaded = EventBookmark::Load(path);
    if (!loaded.ok()) {
      // A damaged bookmark must not stop reports; start over (events may repeat once).
      AddProbeError(posture, kEventsProbe, "BOOKMARK", loaded.status().ToString());
    } else {
      bookmark = std::move(*loaded);
    }
  }
  EventBookmark::Selection sel =
      bookmark.Take(std::move(events), options.max_events_per_report, latest);
  for (auto& e : sel.events) *posture->add_events() = std::move(e);
  posture->set_events_dropped(posture->events_dropped() + sel.dropped);
  if (path.empty()) return std::nullopt;
  return bookmark;
}

// Saves the bookmark the last Collect advanced, once; a Collect that is never committed (a failed
// spool write, a kill) leaves the saved one, so the next Collect reads the same events again.
absl::Status CommitBookmark(const WindowsOptions& options, std::optional<EventBookmark>* pending) {
  if (!pending->has_value()) return absl::OkStatus();
  absl::Status saved = MakeDirs(options.state_dir, 0700);
  if (saved.ok()) saved = (*pending)->Save(BookmarkPath(options));
  pending->reset();
  return saved;
}

class CaptureSource : public PostureSource {
 public:
  CaptureSource(std::string dir, WindowsOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  }

  absl::StatusOr<v1::Posture> Collect() override {
    pending_bookmark_.reset();
    std::error_code ec;
    // u8path: dir_ is UTF-8, which Windows would otherwise read in the ANSI code page.
    if (!std::filesystem::is_directory(std::filesystem::u8path(dir_), ec)) {
      return absl::NotFoundError(absl::StrCat("windows-capture:", dir_, ": not a directory"));
    }
    v1::Posture posture;
    posture.mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
    posture.mutable_host()->set_agent_version(kVersion);
    ReadCaptureInfo(&posture);
    for (const ProbeSpec& probe : WindowsProbes()) {
      std::string path = absl::StrCat(dir_, "/", probe.file);
      if (!FileExists(path)) continue;  // not collected: unknown, not false
      auto bytes = ReadFile(path, kMaxCaptureFileBytes);
      if (!bytes.ok()) {
        AddProbeError(&posture, probe.id(), "READ", bytes.status().message());
        continue;
      }
      std::vector<std::string> problems;
      absl::Status parsed = probe.parse(*bytes, probe.file, &posture, &problems);
      if (!parsed.ok()) AddProbeError(&posture, probe.id(), ProbeCodeOf(parsed), parsed.message());
      AddProblems(&posture, probe.id(), problems);
    }
    ReadEvents(&posture);
    FinishPosture(&posture);
    return posture;
  }

  std::string Describe() const override { return absl::StrCat("windows-capture:", dir_); }

  absl::Status CommitCollected() override { return CommitBookmark(options_, &pending_bookmark_); }

 private:
  // capture.json (written by Capture-SmbPosture.ps1): when, and which cmdlets failed there.
  void ReadCaptureInfo(v1::Posture* posture) {
    std::string path = absl::StrCat(dir_, "/capture.json");
    if (!FileExists(path)) return;
    auto bytes = ReadFile(path, 1 << 20);
    if (!bytes.ok()) {
      AddProbeError(posture, kCaptureProbe, "READ", bytes.status().message());
      return;
    }
    auto objects = ParsePsObjects(*bytes, "capture.json");
    if (!objects.ok()) {
      AddProbeError(posture, kCaptureProbe, "PARSE", objects.status().message());
      return;
    }
    std::vector<std::string> problems;
    for (const auto& obj : *objects) {
      PsObject o(obj, "capture.json", &problems);
      if (auto t = o.Time("CapturedAt")) *posture->mutable_collected_at() = *t;
      if (const nlohmann::json* errors = o.Find("Errors"); errors != nullptr) {
        auto list = errors->is_array() ? *errors : nlohmann::json::array({*errors});
        for (const auto& err : list) {
          if (!err.is_object()) continue;
          PsObject e(err, "capture.json.Errors", &problems);
          std::string probe = e.String("Probe").value_or(std::string(kCaptureProbe.name));
          AddProbeError(posture, ProbeNamed(probe), "CAPTURE", e.String("Message").value_or(""));
        }
      }
    }
    AddProblems(posture, kCaptureProbe, problems);
  }

  void ReadEvents(v1::Posture* posture) {
    std::string path = absl::StrCat(dir_, "/events.json");
    if (!FileExists(path)) return;
    auto bytes = ReadFile(path, kMaxCaptureFileBytes);
    if (!bytes.ok()) {
      AddProbeError(posture, kEventsProbe, "READ", bytes.status().message());
      return;
    }
    std::vector<std::string> problems;
    std::map<std::string, uint64_t> latest;
    auto events = ParseEvents(*bytes, "events.json", &problems, &latest);
    AddProblems(posture, kEventsProbe, problems);
    if (!events.ok()) {
      AddProbeError(posture, kEventsProbe, "PARSE", events.status().message());
      return;
    }
    pending_bookmark_ = SelectEvents(options_, std::move(*events), latest, posture);
  }

  std::string dir_;
  WindowsOptions options_;
  std::optional<EventBookmark> pending_bookmark_;
};

class LiveSource : public PostureSource {
 public:
  LiveSource(WindowsOptions options, PowerShellRunner* runner)
      : options_(std::move(options)), runner_(runner) {}

  absl::StatusOr<v1::Posture> Collect() override {
    pending_bookmark_.reset();
    v1::Posture posture;
    posture.mutable_host()->set_platform(v1::PLATFORM_WINDOWS);
    posture.mutable_host()->set_agent_version(kVersion);
    *posture.mutable_collected_at() = ToProto(options_.now());
    for (const ProbeSpec& probe : WindowsProbes()) {
      auto out = Run(std::string(probe.probe), "{}");
      if (!out.ok()) {
        AddProbeError(&posture, probe.id(), ProbeCodeOf(out.status()), out.status().message());
        continue;
      }
      std::vector<std::string> problems;
      absl::Status parsed = probe.parse(*out, probe.probe, &posture, &problems);
      if (!parsed.ok()) AddProbeError(&posture, probe.id(), "PARSE", parsed.message());
      AddProblems(&posture, probe.id(), problems);
    }
    // No cmdlet shows a session's client port: match by address where only one connection
    // comes from it.
    FillSessionRoundTrips(options_.tcp_stats, WindowsSmbPorts(), PeerMatch::kAddressOrUniqueAddress,
                          kTcpEstatsProbe, &posture);
    if (options_.detect_cpu) {
      std::string model = posture.host().cpu().model();
      *posture.mutable_host()->mutable_cpu() = options_.detect_cpu();
      if (posture.host().cpu().model().empty())
        posture.mutable_host()->mutable_cpu()->set_model(model);
    }
    CollectEvents(&posture);
    FinishPosture(&posture);
    return posture;
  }

  std::string Describe() const override { return "windows"; }

  absl::Status CommitCollected() override { return CommitBookmark(options_, &pending_bookmark_); }

 private:
  absl::StatusOr<std::string> Run(const std::string& probe, std::string data) {
    PowerShellScript script;
    script.probe = probe;
    script.text = ProbeScript(probe);
    script.data_json = std::move(data);
    script.timeout = options_.cmdlet_timeout;
    script.max_output_bytes = options_.max_output_bytes;
    return runner_->Run(script);
  }

  void CollectEvents(v1::Posture* posture) {
    std::string path = BookmarkPath(options_);
    EventBookmark bookmark;
    if (!path.empty()) {
      auto loaded = EventBookmark::Load(path);
      if (loaded.ok()) bookmark = std::move(*loaded);
    }
    nlohmann::json data = {{"max", options_.max_events_per_report},
                           {"channels", nlohmann::json::array()}};
    for (const auto& channel : SmbEventChannels()) {
      data["channels"].push_back({{"name", channel}, {"after", bookmark.Last(channel)}});
    }
    auto out = Run("events", data.dump());
    if (!out.ok()) {
      AddProbeError(posture, kEventsProbe, ProbeCodeOf(out.status()), out.status().message());
      return;  // the bookmark stays: the next report picks these events up
    }
    std::vector<std::string> problems;
    std::map<std::string, uint64_t> latest;
    auto events = ParseEvents(*out, "events", &problems, &latest);
    AddProblems(posture, kEventsProbe, problems);
    if (!events.ok()) {
      AddProbeError(posture, kEventsProbe, "PARSE", events.status().message());
      return;
    }
    pending_bookmark_ = SelectEvents(options_, std::move(*events), latest, posture);
  }

  WindowsOptions options_;
  std::optional<EventBookmark> pending_bookmark_;
  PowerShellRunner* runner_;
};

std::string Utf8ToUtf16LeBytes(absl::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0xF0 && i + 3 < s.size()) {
      cp = ((c & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) |
           (s[i + 3] & 0x3F);
      len = 4;
    } else if (c >= 0xE0 && i + 2 < s.size()) {
      cp = ((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
      len = 3;
    } else if (c >= 0xC0 && i + 1 < s.size()) {
      cp = ((c & 0x1F) << 6) | (s[i + 1] & 0x3F);
      len = 2;
    }
    i += len;
    auto put = [&out](uint32_t u) {
      out.push_back(static_cast<char>(u & 0xFF));
      out.push_back(static_cast<char>((u >> 8) & 0xFF));
    };
    if (cp >= 0x10000) {
      cp -= 0x10000;
      put(0xD800 + (cp >> 10));
      put(0xDC00 + (cp & 0x3FF));
    } else {
      put(cp);
    }
  }
  return out;
}

class CommandPowerShellRunner : public PowerShellRunner {
 public:
  CommandPowerShellRunner(CommandRunner* runner, std::string exe)
      : runner_(runner), exe_(std::move(exe)) {}

  absl::StatusOr<std::string> Run(const PowerShellScript& script) override {
    Command command = BuildPowerShellCommand(script, exe_);
    auto result = runner_->Run(command);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat(script.probe, ": ", result.status().message()));
    }
    if (result->exit_code != 0) {
      std::string err(absl::StripAsciiWhitespace(result->stderr_data));
      if (err.size() > 2000) err.resize(2000);
      return absl::UnknownError(
          absl::StrCat(script.probe, ": exit code ", result->exit_code, ": ", err));
    }
    return std::move(result->stdout_data);
  }

 private:
  CommandRunner* runner_;
  std::string exe_;
};

}  // namespace

Command BuildPowerShellCommand(const PowerShellScript& script, const std::string& exe) {
  Command c;
  std::string encoded = absl::Base64Escape(Utf8ToUtf16LeBytes(ScriptPrelude() + script.text));
  c.argv = {exe,      "-NoLogo",       "-NoProfile", "-NonInteractive", "-ExecutionPolicy",
            "Bypass", "-OutputFormat", "Text",       "-EncodedCommand", encoded};
  c.env[kDataEnvVar] = absl::Base64Escape(script.data_json.empty() ? "{}" : script.data_json);
  c.timeout = script.timeout;
  c.max_output_bytes = script.max_output_bytes;
  return c;
}

std::unique_ptr<PowerShellRunner> NewPowerShellRunner(CommandRunner* runner,
                                                      std::string powershell_exe) {
  return std::make_unique<CommandPowerShellRunner>(runner, std::move(powershell_exe));
}

std::unique_ptr<PostureSource> NewWindowsCaptureSource(std::string dir) {
  return NewWindowsCaptureSource(std::move(dir), WindowsOptions{});
}

std::unique_ptr<PostureSource> NewWindowsCaptureSource(std::string dir, WindowsOptions options) {
  return std::make_unique<CaptureSource>(std::move(dir), std::move(options));
}

std::unique_ptr<PostureSource> NewWindowsLiveSource(WindowsOptions options,
                                                    PowerShellRunner* runner) {
  return std::make_unique<LiveSource>(std::move(options), runner);
}

}  // namespace smbfleet::agent::windows
