// Counters around a change: the before-window an ack carries and the after-window a later
// report carries, kept with the host's part in the change, and the measured effect beside the
// cost model's prediction once both are there. Counters never fail an ack or a report.

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/changes/change_service.h"
#include "common/change_counters.h"
#include "common/logging.h"

namespace smbfleet::collector::changes {

namespace v1 = smbfleet::v1;

namespace {

std::shared_ptr<spdlog::logger> Log() { return Logger("collector"); }

// Entries of one report beyond this many are not looked at (an agent sends one per change
// whose after-window ended since its last acknowledged report).
constexpr int kMaxCountersPerReport = 64;

}  // namespace

void ChangeService::CountersReported(
    const std::string& host,
    const google::protobuf::RepeatedPtrField<v1::ChangeCounters>& counters) {
  for (int i = 0; i < counters.size(); ++i) {
    const v1::ChangeCounters& c = counters[i];
    if (i >= kMaxCountersPerReport) {
      Log()->warn("counters of {}: {} entries in one report, the first {} kept", LogSafe(host),
                  counters.size(), kMaxCountersPerReport);
      break;
    }
    absl::Status stored =
        StoreCounters(host, c.change_id(), c.version(), c.has_before() ? &c.before() : nullptr,
                      c.has_after() ? &c.after() : nullptr);
    if (!stored.ok()) {
      Log()->warn("counters of change {} on {} not kept: {}", LogSafe(c.change_id().substr(0, 64)),
                  LogSafe(host), LogSafe(stored));
    }
  }
}

absl::Status ChangeService::StoreCounters(const std::string& host, const std::string& change_id,
                                          uint64_t version, const v1::CounterWindow* before,
                                          const v1::CounterWindow* after) {
  const std::string id = change_id.substr(0, 64);
  // A window that fails its checks is refused alone: the other may still be kept.
  auto check = [&](const v1::CounterWindow* w,
                   const char* which) -> std::optional<v1::CounterWindow> {
    if (w == nullptr) return std::nullopt;
    auto checked = CheckWindow(*w, absl::StrCat("change ", id, " on ", host, ", ", which));
    if (!checked.ok()) {
      Log()->warn("counters refused: {}", LogSafe(checked.status()));
      return std::nullopt;
    }
    if (checked->dropped > 0) {
      Log()->info(
          "change {} on {}, {}: {} of {} samples out of the window or out of range, dropped",
          LogSafe(id), LogSafe(host), which, checked->dropped, w->samples_size());
    }
    return std::move(checked->window);
  };
  std::optional<v1::CounterWindow> checked_before = check(before, "before");
  std::optional<v1::CounterWindow> checked_after = check(after, "after");
  if (!checked_before.has_value() && !checked_after.has_value()) return absl::OkStatus();
  return changes_->UpdateHostCounters(
      id, host,
      [&](const v1::Change& change, const v1::ChangeHost& h) -> absl::StatusOr<HostCounters> {
        if (h.nonce().empty()) {
          return absl::NotFoundError(
              absl::StrCat("no order of change ", id, " was sent to ", host));
        }
        if (change.version() != version) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the counters are of version ", version, ", the change is at ", change.version()));
        }
        HostCounters out;
        // The first before-window stays: the ack's is the one taken right before the apply.
        if (checked_before.has_value() && !h.has_counters_before()) out.before = checked_before;
        if (checked_after.has_value()) out.after = checked_after;
        if (!out.before.has_value() && !out.after.has_value()) return out;
        const v1::CounterWindow* b = out.before.has_value()    ? &*out.before
                                     : h.has_counters_before() ? &h.counters_before()
                                                               : nullptr;
        const v1::CounterWindow* a = out.after.has_value()    ? &*out.after
                                     : h.has_counters_after() ? &h.counters_after()
                                                              : nullptr;
        if (b != nullptr && a != nullptr) {
          out.measured = Measure(b->summary(), a->summary(), h.impact().cost());
        }
        return out;
      });
}

}  // namespace smbfleet::collector::changes
