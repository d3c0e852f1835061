#include "agent/platform/windows/testing/fake_powershell_runner.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/platform/windows/ps_json.h"
#include "common/files.h"
#include "nlohmann/json.hpp"

namespace smbfleet::agent::windows::testing {
namespace {

std::string FileOf(const std::string& probe) { return probe + ".json"; }

}  // namespace

FakePowerShellRunner::FakePowerShellRunner(std::string capture_dir)
    : dir_(std::move(capture_dir)) {}

void FakePowerShellRunner::SetOutput(const std::string& probe, std::string bytes) {
  outputs_[probe] = std::move(bytes);
}

void FakePowerShellRunner::SetError(const std::string& probe, absl::Status status) {
  errors_[probe] = std::move(status);
}

void FakePowerShellRunner::ClearError(const std::string& probe) { errors_.erase(probe); }

std::vector<PowerShellScript> FakePowerShellRunner::CallsOf(const std::string& probe) const {
  std::vector<PowerShellScript> out;
  for (const auto& c : calls_) {
    if (c.probe == probe) out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::string> FakePowerShellRunner::Output(const std::string& probe) {
  auto it = outputs_.find(probe);
  if (it != outputs_.end()) return it->second;
  if (dir_.empty()) return std::string();
  std::string path = absl::StrCat(dir_, "/", FileOf(probe));
  if (!FileExists(path)) return std::string();  // the cmdlet printed nothing
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  outputs_[probe] = *bytes;
  return *bytes;
}

absl::StatusOr<std::string> FakePowerShellRunner::Run(const PowerShellScript& script) {
  calls_.push_back(script);
  auto err = errors_.find(script.probe);
  if (err != errors_.end()) return err->second;
  if (script.probe == "apply") {
    if (fail_apply_in_ > 0 && --fail_apply_in_ == 0) {
      if (fail_later_) fail_apply_in_ = 1;
      return fail_apply_status_;
    }
    if (!apply_sticks_) return std::string();
    try {
      return Apply(script.data_json);
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("apply: bad data: ", e.what()));
    }
  }
  auto out = Output(script.probe);
  if (!out.ok()) return out.status();
  if (out->size() > script.max_output_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(script.probe, ": output over the cap"));
  }
  return out;
}

void FakePowerShellRunner::FailApplyCall(int n, absl::Status status, bool and_later) {
  fail_apply_in_ = n;
  fail_apply_status_ = std::move(status);
  fail_later_ = and_later;
}

// What the apply script does, on the replayed state: find the target (a share by exact name),
// set each parameter, print nothing.
absl::StatusOr<std::string> FakePowerShellRunner::Apply(const std::string& data_json) {
  nlohmann::json data = nlohmann::json::parse(data_json);
  std::string target = data.at("target").get<std::string>();
  std::string probe = target == "server"   ? "Get-SmbServerConfiguration"
                      : target == "client" ? "Get-SmbClientConfiguration"
                                           : "Get-SmbShare";
  auto bytes = Output(probe);
  if (!bytes.ok()) return bytes.status();
  auto objects = ParsePsObjects(*bytes, probe);
  if (!objects.ok()) return objects.status();
  bool found = false;
  for (auto& o : *objects) {
    if (target == "share" && !absl::EqualsIgnoreCase(o.value("Name", std::string()),
                                                     data.at("share").get<std::string>())) {
      continue;
    }
    found = true;
    for (auto it = data.at("parameters").begin(); it != data.at("parameters").end(); ++it) {
      nlohmann::json value = it.value();
      // The cmdlet takes Smb2DialectMin by name and reports the number.
      static const std::map<std::string, int> kDialects = {
          {"SMB202", 514}, {"SMB210", 528}, {"SMB300", 768}, {"SMB302", 770}, {"SMB311", 785}};
      if (value.is_string() && kDialects.count(value.get<std::string>())) {
        value = kDialects.at(value.get<std::string>());
      }
      o[it.key()] = value;
    }
  }
  if (!found) {
    return absl::UnknownError(absl::StrCat("apply: exit code 1: No MSFT_SmbShare objects found"));
  }
  nlohmann::json out = target == "share" ? nlohmann::json(*objects) : nlohmann::json((*objects)[0]);
  outputs_[probe] = out.dump();
  return std::string();
}

}  // namespace smbfleet::agent::windows::testing
