// AdminApi's cost model calibration calls (docs/cost-model.md "Calibration"): the change hosts
// with a measured impact, grouped by host class (common/change_calibration.h), computed now,
// saved with their inputs, and the saved ones.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/admin/admin_api.h"
#include "common/change_calibration.h"
#include "common/logging.h"
#include "common/safe_text.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace smbfleet::collector {
namespace {

namespace v1 = smbfleet::v1;
using google::protobuf::util::TimeUtil;

constexpr absl::Duration kDefaultSince = absl::Hours(24 * 30);
// A calibration reads at most this many change hosts, the newest; more is said (truncated).
constexpr uint32_t kMaxCalibrationInputs = 10000;
constexpr uint32_t kDefaultCalibrations = 20;
constexpr uint32_t kMaxCalibrations = 1000;

absl::StatusOr<absl::Duration> SinceOf(const google::protobuf::Duration& since, bool has_since) {
  if (!has_since) return kDefaultSince;
  if (since.seconds() <= 0 || since.nanos() < 0 ||
      since.seconds() > TimeUtil::kDurationMaxSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("since: ", TimeUtil::ToString(since),
                                                   " is not a positive duration of at most ",
                                                   TimeUtil::kDurationMaxSeconds, "s"));
  }
  return absl::Seconds(since.seconds()) + absl::Nanoseconds(since.nanos());
}

google::protobuf::Timestamp Ts(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

}  // namespace

absl::StatusOr<v1::CostModelCalibration> AdminApi::ComputeCalibration(
    const google::protobuf::Duration& since, bool has_since, bool with_inputs) {
  ASSIGN_OR_RETURN(absl::Duration window, SinceOf(since, has_since));
  const absl::Time from = clock_() - window;
  ASSIGN_OR_RETURN(MeasuredChangeHosts read,
                   changes_->ListMeasuredChangeHosts(from, kMaxCalibrationInputs));
  std::vector<CalibrationInput> inputs;
  inputs.reserve(read.hosts.size());
  v1::CostModelCalibration out;
  *out.mutable_since() = Ts(from);
  out.set_truncated(read.truncated);
  out.set_input_count(static_cast<uint32_t>(read.hosts.size()));
  for (MeasuredChangeHost& m : read.hosts) {
    CalibrationInput& in = inputs.emplace_back();
    in.platform = CalibrationPlatform(m.platform);
    if (with_inputs) {
      v1::CostModelCalibrationInput* saved = out.add_inputs();
      saved->set_change_id(m.change_id);
      saved->set_host(m.host.host());
      saved->set_platform(in.platform.empty() ? "unknown" : in.platform);
      saved->set_protection_before(m.host.impact().cost().before());
      saved->set_protection_after(m.host.impact().cost().after());
      *saved->mutable_measured() = m.host.measured();
    }
    in.host = std::move(m.host);
  }
  for (const CalibrationGroup& g : Calibrate(inputs)) *out.add_groups() = ToProto(g);
  return out;
}

absl::StatusOr<v1::CostModelCalibrationResponse> AdminApi::CostModelCalibration(
    const Principal& caller, const v1::CostModelCalibrationRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  v1::CostModelCalibrationResponse response;
  ASSIGN_OR_RETURN(*response.mutable_calibration(),
                   ComputeCalibration(request.since(), request.has_since(), false));
  return response;
}

absl::StatusOr<v1::SaveCostModelCalibrationResponse> AdminApi::SaveCostModelCalibration(
    const Principal& caller, const v1::SaveCostModelCalibrationRequest& request) {
  ASSIGN_OR_RETURN(changes::Actor actor, ChangeActor(caller, Permission::kCalibrateCostModel));
  ASSIGN_OR_RETURN(v1::CostModelCalibration calibration,
                   ComputeCalibration(request.since(), request.has_since(), true));
  const absl::Time now = clock_();
  *calibration.mutable_saved_at() = Ts(now);
  calibration.set_saved_by(actor.name);
  size_t factors = 0;
  for (const auto& g : calibration.groups()) factors += g.has_suggested_cpu_per_byte_factor();
  v1::AuditEntry audit;
  *audit.mutable_at() = Ts(now);
  audit.set_actor(actor.name);
  audit.set_action("cost_model_calibrated");
  audit.set_detail(absl::StrFormat("%d host classes (%d with a factor) from %d change hosts%s",
                                   calibration.groups_size(), factors, calibration.input_count(),
                                   calibration.truncated() ? ", truncated" : ""));
  ASSIGN_OR_RETURN(int64_t id, changes_->SaveCostModelCalibration(calibration, audit));
  calibration.set_id(id);
  calibration.clear_inputs();
  Logger("collector")
      ->info("{} saved cost model calibration {}: {} host classes from {} change hosts",
             LogSafe(actor.name), id, calibration.groups_size(), calibration.input_count());
  v1::SaveCostModelCalibrationResponse response;
  *response.mutable_calibration() = std::move(calibration);
  return response;
}

absl::StatusOr<v1::ListCostModelCalibrationsResponse> AdminApi::ListCostModelCalibrations(
    const Principal& caller, const v1::ListCostModelCalibrationsRequest& request) {
  RETURN_IF_ERROR(ChangeActor(caller, Permission::kReadChanges).status());
  const uint32_t limit =
      request.limit() == 0 ? kDefaultCalibrations : std::min(request.limit(), kMaxCalibrations);
  ASSIGN_OR_RETURN(auto saved, changes_->ListCostModelCalibrations(limit));
  v1::ListCostModelCalibrationsResponse response;
  for (auto& c : saved) *response.add_calibrations() = std::move(c);
  return response;
}

}  // namespace smbfleet::collector
