#include "agent/platform/windows/windows_native.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/platform/windows/event_xml.h"
#include "agent/platform/windows/events.h"
#include "agent/platform/windows/shim/event_log.h"
#include "agent/platform/windows/shim/process.h"
#include "agent/platform/windows/shim/system_paths.h"
#include "agent/platform/windows/shim/tcp_estats.h"
#include "agent/platform/windows/tcp_estats.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows {
namespace {

class WindowsCommandRunner : public CommandRunner {
 public:
  absl::StatusOr<CommandResult> Run(const Command& command) override {
    shim::ProcessRequest req;
    req.argv = command.argv;
    for (const auto& [k, v] : command.env) req.env.emplace_back(k, v);
    req.stdin_data = command.stdin_data;
    req.timeout_ms = static_cast<uint32_t>(command.timeout.count());
    req.max_output_bytes = command.max_output_bytes;
    shim::ProcessResult r = shim::RunProcess(req);
    switch (r.outcome) {
      case shim::ProcessOutcome::kExited: {
        CommandResult out;
        out.exit_code = static_cast<int>(r.exit_code);
        out.stdout_data = std::move(r.stdout_data);
        out.stderr_data = std::move(r.stderr_data);
        return out;
      }
      case shim::ProcessOutcome::kTimedOut:
        return absl::DeadlineExceededError(r.error);
      case shim::ProcessOutcome::kOutputTooLarge:
        return absl::ResourceExhaustedError(r.error);
      case shim::ProcessOutcome::kNotFound:
        return absl::NotFoundError(r.error);
      case shim::ProcessOutcome::kError:
        break;
    }
    return absl::InternalError(r.error);
  }
};

class NativeEventsRunner : public PowerShellRunner {
 public:
  explicit NativeEventsRunner(PowerShellRunner* inner) : inner_(inner) {}

  absl::StatusOr<std::string> Run(const PowerShellScript& script) override {
    if (script.probe != "events") return inner_->Run(script);
    nlohmann::json data = nlohmann::json::parse(script.data_json, nullptr, false);
    if (data.is_discarded() || !data.contains("channels") || !data["channels"].is_array()) {
      return absl::InvalidArgumentError("events: malformed request");
    }
    size_t max = data.value("max", static_cast<size_t>(500));
    std::vector<std::pair<std::string, shim::ChannelRead>> reads;
    for (const auto& c : data["channels"]) {
      std::string name = c.value("name", std::string());
      uint64_t after = c.value("after", static_cast<uint64_t>(0));
      reads.emplace_back(name, shim::ReadChannel(name, after, max));
    }
    return EventsDocument(reads);
  }

 private:
  PowerShellRunner* inner_;
};

WindowsOptions WithTcpStats(WindowsOptions options, TcpStats* tcp_stats) {
  options.tcp_stats = tcp_stats;
  return options;
}

// Owns the runners and the TCP statistics reader the live source uses.
class DefaultLiveSource : public PostureSource {
 public:
  explicit DefaultLiveSource(WindowsOptions options)
      : commands_(NewWindowsCommandRunner()),
        powershell_(NewPowerShellRunner(commands_.get(), shim::SystemPowerShellPath())),
        events_(NewNativeEventsRunner(powershell_.get())),
        tcp_stats_(NewEstatsTcpStats(&shim::ReadTcpEstats)),
        source_(NewWindowsLiveSource(WithTcpStats(std::move(options), tcp_stats_.get()),
                                     events_.get())) {}

  absl::StatusOr<smbfleet::v1::Posture> Collect() override { return source_->Collect(); }
  absl::Status CommitCollected() override { return source_->CommitCollected(); }
  std::string Describe() const override { return "windows"; }

 private:
  std::unique_ptr<CommandRunner> commands_;
  std::unique_ptr<PowerShellRunner> powershell_;
  std::unique_ptr<PowerShellRunner> events_;
  std::unique_ptr<TcpStats> tcp_stats_;
  std::unique_ptr<PostureSource> source_;
};

}  // namespace

std::unique_ptr<CommandRunner> NewWindowsCommandRunner() {
  return std::make_unique<WindowsCommandRunner>();
}

std::unique_ptr<PowerShellRunner> NewNativeEventsRunner(PowerShellRunner* inner) {
  return std::make_unique<NativeEventsRunner>(inner);
}

std::unique_ptr<PostureSource> NewWindowsDefaultLiveSource(WindowsOptions options) {
  return std::make_unique<DefaultLiveSource>(std::move(options));
}

}  // namespace smbfleet::agent::windows
