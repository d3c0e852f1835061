#ifndef SMBFLEET_AGENT_PLATFORM_SAMBA_FAKE_RUNNER_FOR_TEST_H_
#define SMBFLEET_AGENT_PLATFORM_SAMBA_FAKE_RUNNER_FOR_TEST_H_

// A CommandRunner that replays canned results keyed by the argv joined with spaces, and records
// every command it was asked to run.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/command_runner.h"

namespace smbfleet::agent::samba {

class FakeRunner : public CommandRunner {
 public:
  using Handler = std::function<absl::StatusOr<CommandResult>(const Command&)>;

  void Set(const std::string& argv, absl::StatusOr<CommandResult> result) {
    handlers_[argv] = [result](const Command&) { return result; };
  }
  void SetHandler(const std::string& argv, Handler handler) {
    handlers_[argv] = std::move(handler);
  }
  // For commands whose argv starts with `prefix` and has no exact handler (e.g. testparm of a
  // staged smb.conf copy in a temp folder).
  void SetPrefixHandler(const std::string& prefix, Handler handler) {
    prefix_handlers_[prefix] = std::move(handler);
  }
  static CommandResult Ok(std::string out) { return CommandResult{0, std::move(out), ""}; }
  static CommandResult Exit(int code, std::string err) {
    return CommandResult{code, "", std::move(err)};
  }

  absl::StatusOr<CommandResult> Run(const Command& command) override {
    std::string key = absl::StrJoin(command.argv, " ");
    commands_.push_back(command);
    auto it = handlers_.find(key);
    if (it != handlers_.end()) return it->second(command);
    for (const auto& [prefix, handler] : prefix_handlers_) {
      if (key.compare(0, prefix.size(), prefix) == 0) return handler(command);
    }
    return absl::NotFoundError(absl::StrCat("fake: no handler for ", key));
  }

  const std::vector<Command>& commands() const { return commands_; }
  std::vector<std::string> argvs() const {
    std::vector<std::string> out;
    for (const auto& c : commands_) out.push_back(absl::StrJoin(c.argv, " "));
    return out;
  }

 private:
  std::map<std::string, Handler> handlers_;
  std::map<std::string, Handler> prefix_handlers_;
  std::vector<Command> commands_;
};

}  // namespace smbfleet::agent::samba

#endif  // SMBFLEET_AGENT_PLATFORM_SAMBA_FAKE_RUNNER_FOR_TEST_H_
