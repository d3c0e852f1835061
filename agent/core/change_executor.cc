#include "agent/core/change_executor.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/order_verifier.h"
#include "common/approval_signing.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "policy/settings.h"

namespace smbfleet::agent {
namespace {

using smbfleet::v1::AckChangeRequest;
using smbfleet::v1::ChangeOrder;
using smbfleet::v1::SettingChange;

constexpr int kCrashExitCode = 75;

std::shared_ptr<spdlog::logger> Log() { return Logger("agent"); }

std::string OrderName(const ChangeOrder& o) {
  return absl::StrCat("change ", LogSafe(o.change_id()), " v", o.version());
}

// Values compare in the allowlist's spelling ("true", "SMB_3_0"), whatever the sender wrote.
std::string Normalized(const std::string& setting, const std::string& value) {
  absl::StatusOr<policy::SettingInfo> info = policy::LookupSetting(setting);
  if (!info.ok()) return value;
  return policy::NormalizeSettingValue(*info, value).value_or(value);
}

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

std::string Where(const SettingChange& s) {
  return s.share().empty() ? s.setting() : absl::StrCat(s.setting(), " [", s.share(), "]");
}

std::vector<SettingChange> SettingsOf(const ChangeOrder& order) {
  return {order.settings().begin(), order.settings().end()};
}

// Whether the host's values (as Read returns them, one per setting) are the given ones.
bool HasValues(const std::vector<SettingChange>& current, const std::vector<SettingChange>& want,
               bool skip_unknown) {
  if (current.size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (skip_unknown && want[i].value().empty()) continue;
    if (Normalized(want[i].setting(), current[i].value()) !=
        Normalized(want[i].setting(), want[i].value())) {
      return false;
    }
  }
  return true;
}

// The collector will never take this ack; retrying would only repeat the refusal.
bool IsPermanentAckError(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsFailedPrecondition(s);
}

bool TouchedHost(AckChangeRequest::Result r) {
  return r == AckChangeRequest::RESULT_APPLIED || r == AckChangeRequest::RESULT_ROLLED_BACK ||
         r == AckChangeRequest::RESULT_FAILED;
}

}  // namespace

absl::StatusOr<CrashPoint> CrashPointFromEnv() {
  const char* v = std::getenv("SMBFLEET_AGENT_TEST_CRASH_AFTER");
  if (v == nullptr || *v == '\0') return CrashPoint::kNone;
  std::string s(v);
  if (s == "journal") return CrashPoint::kAfterJournal;
  if (s == "apply") return CrashPoint::kAfterApply;
  if (s == "finish") return CrashPoint::kAfterFinish;
  if (s == "ack") return CrashPoint::kAfterAck;
  return absl::InvalidArgumentError(absl::StrCat(
      "SMBFLEET_AGENT_TEST_CRASH_AFTER: expected journal, apply, finish or ack, got '", s, "'"));
}

ChangeExecutor::ChangeExecutor(ChangeExecutorOptions options, SettingsApplier* applier,
                               CollectorClient* client, Clock* clock, uint64_t seed)
    : options_(std::move(options)),
      applier_(applier),
      client_(client),
      clock_(clock),
      journal_(options_.changes.journal_dir),
      replay_(options_.changes.journal_dir + "/applied-orders.json"),
      ack_backoff_(std::chrono::seconds(1), options_.ack_max_backoff, seed) {}

absl::Status ChangeExecutor::Open() {
  std::lock_guard<std::mutex> apply(apply_mu_);
  RETURN_IF_ERROR(journal_.Open());
  RETURN_IF_ERROR(replay_.Open());
  // A crash between the journal's "started" and the replay record: the order may have been
  // applied, so it is remembered before it is recovered.
  for (const JournalEntry& e : journal_.InState(JournalState::kStarted)) {
    absl::StatusOr<v1::ApprovalPayload> p = ParseApprovalPayload(e.order.approval_payload());
    if (!p.ok() || replay_.Seen(e.order.change_id(), e.order.version(), p->nonce())) continue;
    RETURN_IF_ERROR(replay_.Record(e.order.change_id(), e.order.version(), p->nonce(),
                                   TimeOf(p->not_after()), options_.wall_now()));
  }
  for (const JournalEntry& e : journal_.InState(JournalState::kStarted)) {
    if (crashed_) break;
    Recover(e);
  }
  std::lock_guard<std::mutex> lock(mu_);
  completed_ = journal_.RecentlyCompleted(options_.max_completed_ids);
  return absl::OkStatus();
}

void ChangeExecutor::Submit(const ChangeOrder& order) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(order);
  }
  cv_.notify_all();
}

std::vector<std::string> ChangeExecutor::CompletedChangeIds() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_;
}

bool ChangeExecutor::Crash(CrashPoint point) {
  if (options_.crash_after != point) return false;
  if (options_.crash_exits) {
    Log()->warn("SMBFLEET_AGENT_TEST_CRASH_AFTER: exiting at the requested step");
    std::_Exit(kCrashExitCode);  // no atexit handlers or flushes: a crash
  }
  crashed_ = true;
  return true;
}

absl::Status ChangeExecutor::CheckConsent() const {
  if (applier_ == nullptr) return absl::PermissionDeniedError(options_.no_applier_reason);
  if (!options_.changes.enforce) {
    return absl::PermissionDeniedError(
        "change enforcement is off on this host (changes.enforce is false in the agent's own "
        "config); nothing was changed");
  }
  return absl::OkStatus();
}

absl::Status ChangeExecutor::CheckAllowed(const ChangeOrder& order) const {
  for (const SettingChange& s : order.settings()) {
    if (options_.changes.allow.count(s.setting()) == 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          "setting ", s.setting(),
          " is not on this host's changes.allow list: the host's own config does not allow it; "
          "nothing was changed"));
    }
  }
  if (order.settings_size() == 0) {
    return absl::InvalidArgumentError("the order carries no settings; nothing was changed");
  }
  return absl::OkStatus();
}

void ChangeExecutor::FinishUntouched(const ChangeOrder& order, Outcome outcome,
                                     std::vector<SettingChange> current) {
  JournalEntry entry;
  entry.order = order;
  entry.before = current;
  Finish(std::move(entry), std::move(outcome), std::move(current));
}

void ChangeExecutor::Finish(JournalEntry entry, Outcome outcome, std::vector<SettingChange> after,
                            bool touched) {
  AckChangeRequest& ack = entry.ack;
  ack.Clear();
  ack.set_change_id(entry.order.change_id());
  ack.set_version(entry.order.version());
  ack.set_nonce(entry.order.nonce());
  ack.set_result(outcome.result);
  ack.set_message(outcome.message);
  for (const auto& b : entry.before) *ack.add_before() = b;
  for (const auto& a : after) *ack.add_after() = a;
  const bool measured = touched && options_.counters != nullptr && TouchedHost(outcome.result);
  if (measured) *ack.mutable_counters_before() = options_.counters->Before();
  entry.state = JournalState::kFinished;
  Log()->log(outcome.result == AckChangeRequest::RESULT_APPLIED ? spdlog::level::info
                                                                : spdlog::level::warn,
             "{}: {}: {}", OrderName(entry.order), AckChangeRequest::Result_Name(outcome.result),
             outcome.message);
  // Before the journal: a crash in between finishes the order again at the next start, which
  // records the after-window again, never loses it.
  if (measured) {
    if (absl::Status s =
            options_.counters->StartAfter(entry.order.change_id(), entry.order.version());
        !s.ok()) {
      Log()->warn("{}: no after-window of load counters will follow: {}", OrderName(entry.order),
                  LogSafe(s));
    }
  }
  if (absl::Status s = journal_.Put(entry); !s.ok()) {
    // Without a journal the ack can still be sent once; it will not survive a restart.
    Log()->error("{}: cannot journal the result: {}", OrderName(entry.order), LogSafe(s));
    if (!Crash(CrashPoint::kAfterFinish)) client_->AckChange(ack).IgnoreError();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed_ = journal_.RecentlyCompleted(options_.max_completed_ids);
  }
  Crash(CrashPoint::kAfterFinish);
}

absl::Status ChangeExecutor::RestoreBefore(const JournalEntry& entry) {
  std::vector<SettingChange> restore;
  for (const SettingChange& b : entry.before) {
    if (b.value().empty()) continue;  // the host did not report it: nothing known to restore
    SettingChange c = b;
    c.clear_expected_current();
    restore.push_back(std::move(c));
  }
  if (restore.empty()) return absl::OkStatus();
  ApplyResult r = applier_->Apply(restore);
  return r.status();
}

void ChangeExecutor::Process(const ChangeOrder& raw) {
  if (crashed_) return;
  if (absl::Status s = ChangeJournal::ValidateChangeId(raw.change_id()); !s.ok()) {
    AckChangeRequest ack;
    ack.set_change_id(raw.change_id());
    ack.set_version(raw.version());
    ack.set_nonce(raw.nonce());
    ack.set_result(AckChangeRequest::RESULT_FAILED);
    ack.set_message(absl::StrCat("order refused: ", s.message()));
    Log()->error("change order refused: {}", LogSafe(s));
    client_->AckChange(ack).IgnoreError();
    return;
  }
  if (const JournalEntry* done = journal_.Find(raw.change_id(), raw.version())) {
    if (done->state == JournalState::kStarted) return;  // recovered by Open(); never here
    Log()->info("{} was already carried out ({}); sending its ack again, not applying it",
                OrderName(raw), AckChangeRequest::Result_Name(done->ack.result()));
    JournalEntry again = *done;
    again.state = JournalState::kFinished;
    if (absl::Status s = journal_.Put(again); !s.ok()) client_->AckChange(again.ack).IgnoreError();
    return;
  }
  // The host's own consent first: a host that takes no orders says so whatever the order is.
  if (absl::Status s = CheckConsent(); !s.ok()) {
    FinishUntouched(raw, {AckResultOf(s), std::string(s.message())}, {});
    return;
  }
  const TrustedKeys keys = options_.trust ? options_.trust->Keys() : TrustedKeys{};
  OrderCheck check;
  check.host = options_.host;
  check.now = options_.wall_now();
  check.min_approvals = options_.trust ? options_.trust->min_approvals() : 1;
  absl::StatusOr<VerifiedOrder> verified = VerifyOrder(raw, keys, check);
  if (!verified.ok()) {
    FinishUntouched(raw, {AckResultOf(verified.status()), std::string(verified.status().message())},
                    {});
    return;
  }
  const ChangeOrder& order = verified->order;
  const v1::ApprovalPayload& payload = verified->payload;
  if (replay_.Seen(order.change_id(), order.version(), payload.nonce())) {
    FinishUntouched(order,
                    {AckChangeRequest::RESULT_REFUSED,
                     absl::StrCat("replay: ", OrderName(order),
                                  " with this approval nonce was already carried out on this "
                                  "host; not applied again")},
                    {});
    return;
  }
  Log()->info("{}: {} setting(s), {} approval signature(s){}{}", OrderName(order),
              order.settings_size(), order.signatures_size(),
              order.rollback_of().empty()
                  ? ""
                  : absl::StrCat(", rolls back ", LogSafe(order.rollback_of())),
              order.reason().empty() ? "" : absl::StrCat(", reason: ", LogSafe(order.reason())));

  if (absl::Status s = CheckAllowed(order); !s.ok()) {
    FinishUntouched(order, {AckResultOf(s), std::string(s.message())}, {});
    return;
  }
  if (Crash(CrashPoint::kBeforeJournal)) return;

  const std::vector<SettingChange> settings = SettingsOf(order);
  absl::StatusOr<std::vector<SettingChange>> current = applier_->Read(settings);
  if (!current.ok()) {
    AckChangeRequest::Result r = AckResultOf(current.status());
    if (r == AckChangeRequest::RESULT_ROLLED_BACK) r = AckChangeRequest::RESULT_FAILED;
    FinishUntouched(order,
                    {r, absl::StrCat("reading the current values: ", current.status().message(),
                                     "; nothing was changed")},
                    {});
    return;
  }
  for (size_t i = 0; i < settings.size() && i < current->size(); ++i) {
    const SettingChange& want = settings[i];
    if (want.expected_current().empty()) continue;
    const std::string& found = (*current)[i].value();
    if (Normalized(want.setting(), want.expected_current()) != Normalized(want.setting(), found)) {
      FinishUntouched(
          order,
          {AckChangeRequest::RESULT_PRECONDITION_FAILED,
           absl::StrCat(Where(want), ": expected current value '", want.expected_current(),
                        "', found '", found, "'; nothing was changed")},
          *current);
      return;
    }
  }

  JournalEntry entry;
  entry.state = JournalState::kStarted;
  entry.order = order;
  entry.before = *current;
  if (absl::Status s = journal_.Put(entry); !s.ok()) {
    FinishUntouched(
        order,
        {AckChangeRequest::RESULT_FAILED,
         absl::StrCat("cannot write the change journal (", s.message(), "); nothing was changed")},
        *current);
    return;
  }
  if (absl::Status s = replay_.Record(order.change_id(), order.version(), payload.nonce(),
                                      TimeOf(payload.not_after()), options_.wall_now());
      !s.ok()) {
    Finish(
        std::move(entry),
        {AckChangeRequest::RESULT_FAILED, absl::StrCat("cannot record the order against replay (",
                                                       s.message(), "); nothing was changed")},
        *current);
    return;
  }
  if (Crash(CrashPoint::kAfterJournal)) return;

  ApplyResult applied = applier_->Apply(settings, {order.options().begin(), order.options().end()});
  if (Crash(CrashPoint::kAfterApply)) return;

  Outcome outcome{AckResultOf(applied.status()), applied.message()};
  switch (applied.status().code()) {
    case absl::StatusCode::kOk: {
      std::vector<std::string> notes = applied.actions;
      for (const auto& w : applied.warnings) notes.push_back(absl::StrCat("warning: ", w));
      outcome.message = absl::StrJoin(notes, "; ");
      break;
    }
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnavailable:
      // The applier wrote nothing, or restored what it wrote (SettingsApplier's contract).
      break;
    default: {
      absl::Status undo = RestoreBefore(entry);
      if (undo.ok()) {
        outcome = {
            AckChangeRequest::RESULT_ROLLED_BACK,
            absl::StrCat("apply failed: ", applied.message(), "; restored the previous values")};
      } else {
        outcome = {AckChangeRequest::RESULT_FAILED,
                   absl::StrCat("apply failed: ", applied.message(),
                                "; restoring the previous values failed too: ", undo.message())};
      }
      break;
    }
  }
  std::vector<SettingChange> after = applied.after;
  if (!applied.ok() || after.size() != settings.size()) {
    after = applier_->Read(settings).value_or(std::vector<SettingChange>{});
  }
  Finish(std::move(entry), std::move(outcome), std::move(after), /*touched=*/true);
}

void ChangeExecutor::Recover(const JournalEntry& entry) {
  const std::string why = "interrupted by agent restart";
  Log()->warn("{}: {}; checking what the host has", OrderName(entry.order), why);
  if (applier_ == nullptr) {
    Finish(entry,
           {AckChangeRequest::RESULT_FAILED, absl::StrCat(why, "; this source cannot apply")}, {});
    return;
  }
  const std::vector<SettingChange> settings = SettingsOf(entry.order);
  absl::StatusOr<std::vector<SettingChange>> current = applier_->Read(settings);
  if (!current.ok()) {
    Finish(entry,
           {AckChangeRequest::RESULT_FAILED,
            absl::StrCat(why, "; cannot read the current values: ", current.status().message())},
           {}, /*touched=*/true);
    return;
  }
  if (HasValues(*current, settings, /*skip_unknown=*/false)) {
    Finish(entry,
           {AckChangeRequest::RESULT_APPLIED,
            absl::StrCat(why, " after the apply; the host has the ordered values")},
           *current, /*touched=*/true);
    return;
  }
  if (HasValues(*current, entry.before, /*skip_unknown=*/true)) {
    Finish(entry,
           {AckChangeRequest::RESULT_ROLLED_BACK,
            absl::StrCat(why, " before the change took effect; the host has the previous values")},
           *current, /*touched=*/true);
    return;
  }
  absl::Status undo = RestoreBefore(entry);
  std::vector<SettingChange> after = applier_->Read(settings).value_or(*current);
  if (undo.ok()) {
    Finish(entry,
           {AckChangeRequest::RESULT_ROLLED_BACK,
            absl::StrCat(why, " midway; restored the previous values")},
           std::move(after), /*touched=*/true);
  } else {
    Finish(entry,
           {AckChangeRequest::RESULT_FAILED,
            absl::StrCat(why, " midway; restoring the previous values failed: ", undo.message())},
           std::move(after), /*touched=*/true);
  }
}

bool ChangeExecutor::DeliverAcks() {
  bool all = true;
  for (JournalEntry& entry : journal_.InState(JournalState::kFinished)) {
    if (crashed_) return false;
    absl::Status s = client_->AckChange(entry.ack);
    if (!s.ok() && !IsPermanentAckError(s)) {
      Log()->warn("{}: ack not delivered, will retry: {}", OrderName(entry.order), LogSafe(s));
      all = false;
      break;
    }
    if (!s.ok()) {
      Log()->error("{}: the collector refused the ack for good: {}", OrderName(entry.order),
                   LogSafe(s));
    }
    if (Crash(CrashPoint::kAfterAck)) return false;
    if (s.ok() && TouchedHost(entry.ack.result()) && on_changed_) on_changed_();
    entry.state = JournalState::kAcked;
    if (absl::Status w = journal_.Put(entry); !w.ok()) {
      Log()->error("{}: cannot journal the delivered ack: {}", OrderName(entry.order), LogSafe(w));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  completed_ = journal_.RecentlyCompleted(options_.max_completed_ids);
  return all;
}

bool ChangeExecutor::HasPendingAcks() { return !journal_.InState(JournalState::kFinished).empty(); }

void ChangeExecutor::Drain() {
  std::lock_guard<std::mutex> apply(apply_mu_);
  while (true) {
    ChangeOrder order;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) break;
      order = std::move(queue_.front());
      queue_.pop_front();
    }
    Process(order);
  }
  DeliverAcks();
}

void ChangeExecutor::Run() {
  Clock::TimePoint next_ack = clock_->Now();
  bool pending = true;  // deliver whatever Open() recovered at once
  while (true) {
    ChangeOrder order;
    bool have_order = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      Clock::TimePoint deadline = pending ? next_ack : clock_->Now() + std::chrono::hours(24);
      clock_->WaitUntil(lock, cv_, deadline, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopped_ || !queue_.empty();
      });
      if (stopped_) return;
      if (!queue_.empty()) {
        order = std::move(queue_.front());
        queue_.pop_front();
        have_order = true;
      }
    }
    std::lock_guard<std::mutex> apply(apply_mu_);
    if (have_order) Process(order);
    if (crashed_) return;
    if (!have_order && clock_->Now() < next_ack) continue;
    if (!HasPendingAcks()) {
      pending = false;
      continue;
    }
    if (DeliverAcks()) {
      ack_backoff_.Reset();
      pending = false;
    } else {
      pending = true;
      next_ack = clock_->Now() + ack_backoff_.Next();
    }
  }
}

void ChangeExecutor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

}  // namespace smbfleet::agent
