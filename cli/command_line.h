#ifndef SMBFLEET_CLI_COMMAND_LINE_H_
#define SMBFLEET_CLI_COMMAND_LINE_H_

// smbfleetctl's command line: parsed (CLI11) into an Invocation that holds the AdminService
// request to send, so that every flag's meaning is checked and tested without a collector.
// The commands, flags and exit codes are the product contract in docs/smbfleetctl.md.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/policy_command.h"
#include "google/protobuf/message.h"
#include "smbfleet/v1/admin.pb.h"

namespace smbfleet::cli {

// Flags that apply to every command that talks to the collector.
struct GlobalFlags {
  std::string config, collector, cert, key, ca;
  std::string format = "text";  // text, json, or csv (compliance only)
  // Each call's deadline (--call-timeout).
  absl::Duration call_timeout = absl::Seconds(30);
};

// `changes watch`: how often to poll and when to give up (infinite = never).
struct WatchFlags {
  absl::Duration interval = absl::Seconds(2);
  absl::Duration timeout = absl::InfiniteDuration();
};

// `trust ...` flags (cli/commands_trust.h).
struct TrustFlags {
  std::string root_file = "smbfleet-root.key";  // init-root --key
  std::string root_key;                         // sign-approvers --root-key
  uint64_t serial = 0;
  bool from_collector = false;
  std::string approvers_file;
  std::string out_file;
  std::string set_file;   // publish SET
  std::string show_file;  // show --file
};

// `enroll-tokens ...`, `certs list` and `hosts label` flags (cli/commands_enrollment.h).
struct EnrollmentFlags {
  uint32_t uses = 0;
  std::string expires = "7d";
  std::vector<std::string> labels;  // K=V
  std::string comment;
  bool allow_reenrollment = false;
  bool all = false;
  std::string id;
  std::string reason;
  std::string host;
};

struct Invocation {
  GlobalFlags global;
  // "hosts", "host show", "host refresh", "compliance", "findings", "readiness",
  // "changes propose",
  // "changes list", "changes show", "changes approve", "changes reject", "changes halt",
  // "changes resume", "changes rollback", "changes watch", "audit", "waivers list",
  // "waivers request", "waivers approve", "waivers revoke", "whoami", "tokens create",
  // "tokens list", "tokens revoke", "certs revoke", "certs revocations", "certs list",
  // "hosts label", "enroll-tokens create|list|revoke", "trust init-root|sign-approvers|publish|
  // show", "keys init|show", "policy check|eval"; "help" when help was asked for and
  // "completion" for `completion bash` (help holds the text to print for both).
  std::string command;
  std::string help;  // the text to print for "help" and "completion"
  // The request to send, of the type the command's RPC takes (e.g. ApproveChangeRequest).
  std::shared_ptr<google::protobuf::Message> request;
  WatchFlags watch;
  // `changes approve|rollback --key`: the approver key file to sign with (empty: the default).
  std::string approver_key;
  TrustFlags trust;
  EnrollmentFlags enrollment;
  PolicyFlags policy;
  // `keys init|show --key`: the approver key file (empty: DefaultApproverKeyPath()).
  std::string key_file;
  bool key_file_given = false;
};

// Parses the arguments after the program name: every command, one CLI11 tree. A mistake
// (unknown flag, missing argument, malformed --waves, bad --settings file) is InvalidArgument
// naming the flag or file and the value: smbfleetctl prints it and exits 2. `now` anchors
// relative expiry times (`waivers request --expires 30d`).
absl::StatusOr<Invocation> ParseCommandLine(const std::vector<std::string>& args, absl::Time now);

// An expiry flag: an RFC 3339 time or a duration from `now` ("30d"); InvalidArgument naming
// `flag` when malformed or not in the future.
absl::StatusOr<absl::Time> ExpiryArgument(absl::string_view flag, const std::string& text,
                                          absl::Time now);

// `approvers add --public-key`: "ed25519:BASE64", or @FILE holding it (as `keys show` prints
// it); the raw 32-byte key, or InvalidArgument naming the flag.
absl::StatusOr<std::string> PublicKeyArgument(const std::string& text);

// The request as a typed message; the caller knows which type the command carries.
template <typename T>
const T& RequestOf(const Invocation& invocation) {
  return static_cast<const T&>(*invocation.request);
}

// --- The pieces ParseCommandLine is made of, each tested on its own. ---

// `changes propose` flags, as typed.
struct ProposeFlags {
  std::vector<std::string> hosts;
  std::string rule;
  std::vector<std::string> labels;  // K=V
  std::string settings_file;
  std::string reason;
};
absl::StatusOr<smbfleet::v1::ProposeChangeRequest> BuildProposeRequest(const ProposeFlags& flags);

// The --settings file (YAML), e.g.
//   hosts: [fs01, fs02]            # or labels: {site: ams}
//   settings:
//     - {setting: server.requireSigning, value: "true"}
//     - {setting: share.encryptData, share: finance, value: "true"}
// Names and values are checked against the allowlist (policy/settings.h); every problem is
// listed, each naming the file, the entry and the field.
struct SettingsFile {
  std::vector<std::string> hosts;
  std::map<std::string, std::string> labels;
  std::vector<smbfleet::v1::SettingChange> settings;
};
absl::StatusOr<SettingsFile> ParseSettingsFile(const std::string& file, const std::string& text);

// `changes approve` flags; --waves, --watch and --window are checked as the collector will
// parse them (collector/changes/rollout_spec.h).
struct ApproveFlags {
  std::string id;
  std::string comment;
  std::vector<std::string> canary;
  std::string waves;
  std::string watch;
  std::vector<std::string> windows;
  uint32_t max_precondition_failed = 0;  // halt when more hosts than this ack PRECONDITION_FAILED
};
absl::StatusOr<smbfleet::v1::ApproveChangeRequest> BuildApproveRequest(const ApproveFlags& flags);

// `waivers request` flags.
struct WaiverFlags {
  std::string rule;
  std::string host;
  std::string label;  // K=V
  std::string share;
  std::string justification;
  std::string ticket;
  std::string expires;  // RFC 3339, or a duration from now such as 30d
};
absl::StatusOr<smbfleet::v1::RequestWaiverRequest> BuildWaiverRequest(const WaiverFlags& flags,
                                                                      absl::Time now);

// "rolling_out", "ROLLING_OUT" or "CHANGE_STATE_ROLLING_OUT"; the error lists the states.
absl::StatusOr<smbfleet::v1::ChangeState> ParseChangeState(absl::string_view text);

}  // namespace smbfleet::cli

#endif  // SMBFLEET_CLI_COMMAND_LINE_H_
