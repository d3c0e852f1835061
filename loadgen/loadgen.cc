#include "loadgen/loadgen.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/core/agent.h"
#include "agent/core/backoff.h"
#include "agent/core/collector_target.h"
#include "agent/platform/platform.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "common/version.h"
#include "grpcpp/grpcpp.h"
#include "loadgen/sim_identity.h"
#include "loadgen/sim_posture.h"
#include "loadgen/source_address.h"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet::loadgen {

namespace v1 = smbfleet::v1;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kTick{10};
constexpr std::chrono::milliseconds kStatusInterval{200};
constexpr std::chrono::seconds kDrainLimit{15};

double Ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0;
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

nlohmann::json Distribution(std::vector<double> values) {
  nlohmann::json out = {{"count", values.size()}};
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    return values[std::min(values.size() - 1, static_cast<size_t>(q * values.size()))];
  };
  out["p50"] = at(0.50);
  out["p90"] = at(0.90);
  out["p99"] = at(0.99);
  out["max"] = values.back();
  return out;
}

class WatchStream;

struct ReportCall;

struct Agent {
  Agent(int i, std::string n, uint64_t seed, const LoadGenOptions& o)
      : index(i),
        name(std::move(n)),
        report_backoff(o.base_backoff, o.max_backoff, seed),
        rng(seed),
        watch_backoff(o.base_backoff, o.max_backoff, seed ^ 0x5bd1e995) {
    shape = DrawShape(rng);
  }

  int index;
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::AgentService::Stub> stub;
  // Reports: kept until acked, oldest first, one in flight at a time (as the spool flushes).
  std::deque<v1::ReportRequest> pending;
  bool in_flight = false;
  std::shared_ptr<ReportCall> report_call;  // the one in flight, to cancel it when stopping
  Clock::time_point next_report{};
  agent::Backoff report_backoff;
  std::optional<Clock::time_point> failing_since;
  uint64_t sequence = 0;
  std::mt19937_64 rng;
  HostShape shape;
  // The last posture, serialized (a fifth of the message's memory), resent with a new
  // collectedAt when a report does not change it.
  std::optional<std::string> last_posture;
  // The Watch stream: connected once its first message (the collector's greeting) arrived.
  WatchStream* stream = nullptr;
  bool connected = false;
  Clock::time_point next_watch{};
  agent::Backoff watch_backoff;
  std::optional<Clock::time_point> disconnected_at;
};

struct ReportCall {
  grpc::ClientContext context;
  v1::ReportRequest request;
  v1::ReportResponse response;
};

struct AckCall {
  grpc::ClientContext context;
  v1::AckChangeRequest request;
  v1::AckChangeResponse response;
  Clock::time_point received;
};

}  // namespace

struct LoadGen::State {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::unique_ptr<Agent>> agents;
  Clock::time_point start{};
  int64_t start_unix_ms = 0;  // the same instant on the wall clock, to line up with other logs
  int outstanding = 0;        // report calls and watch streams not yet done
  int64_t produced = 0, attempts = 0, acked = 0, rejected = 0, retries = 0;
  std::map<std::string, int64_t> outcomes, errors, watch_ends;
  std::vector<std::string> acked_ids;
  std::vector<double> reconnect_ms, recovery_ms, first_connect_ms;
  int connected = 0;
  int max_connected = 0;
  std::optional<Clock::time_point> all_connected;  // when every agent's stream first was open
  std::optional<Clock::time_point> report_start, last_ack;
  int64_t orders_received = 0, orders_acked = 0, orders_failed = 0, ack_errors = 0;
  std::vector<double> ack_ms;          // from an order's arrival to its ack's answer
  std::vector<double> acked_at_ms;     // when each ack's answer came, from the start
  std::vector<double> received_at_ms;  // when each order arrived, from the start
  int64_t streams_opened = 0;
  nlohmann::json curve = nlohmann::json::array();
  double elapsed_s = 0;
  bool timed_out = false;
  double ack_failure_share = 0;
  std::chrono::milliseconds ack_timeout{10'000};
};

namespace {

class WatchStream final : public grpc::ClientReadReactor<v1::WatchResponse> {
 public:
  WatchStream(LoadGen::State* state, Agent* agent) : state_(state), agent_(agent) {
    request_.set_agent_version(absl::StrCat("smbfleet-loadgen/", kVersion));
  }

  void Start() {
    agent_->stub->async()->Watch(&context_, &request_, this);
    StartRead(&message_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }

  // Acks the order as the real agent does once it finished (docs/agent-changes.md), without
  // verifying or applying it: APPLIED with the ordered settings as `after`, or FAILED for the
  // configured share of orders.
  void Ack(const v1::ChangeOrder& order);

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!agent_->connected) {
        agent_->connected = true;
        ++state_->connected;
        state_->max_connected = std::max(state_->max_connected, state_->connected);
        const auto now = Clock::now();
        if (state_->connected == static_cast<int>(state_->agents.size()) &&
            !state_->all_connected.has_value()) {
          state_->all_connected = now;
        }
        if (agent_->disconnected_at.has_value()) {
          state_->reconnect_ms.push_back(Ms(now - *agent_->disconnected_at));
          agent_->disconnected_at.reset();
        } else {
          state_->first_connect_ms.push_back(Ms(now - state_->start));
        }
        agent_->watch_backoff.Reset();
      }
      if (message_.has_change_order()) {
        ++state_->orders_received;
        state_->received_at_ms.push_back(Ms(Clock::now() - state_->start));
      }
    }
    if (message_.has_change_order()) Ack(message_.change_order());
    StartRead(&message_);
  }

  void OnDone(const grpc::Status& status) override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      const auto now = Clock::now();
      if (agent_->connected) {
        agent_->connected = false;
        --state_->connected;
        agent_->disconnected_at = now;
      }
      ++state_->watch_ends[CodeName(status.error_code())];
      agent_->stream = nullptr;
      agent_->next_watch = now + agent_->watch_backoff.Next();
      --state_->outstanding;
    }
    state_->changed.notify_all();
    delete this;
  }

 private:
  LoadGen::State* state_;
  Agent* agent_;
  grpc::ClientContext context_;
  v1::WatchRequest request_;
  v1::WatchResponse message_;
};

void WatchStream::Ack(const v1::ChangeOrder& order) {
  auto call = std::make_shared<AckCall>();
  call->received = Clock::now();
  v1::AckChangeRequest& ack = call->request;
  ack.set_change_id(order.change_id());
  ack.set_version(order.version());
  ack.set_nonce(order.nonce());
  bool fail = false;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    fail = std::uniform_real_distribution<double>(0, 1)(agent_->rng) < state_->ack_failure_share;
    ++state_->outstanding;
  }
  if (fail) {
    ack.set_result(v1::AckChangeRequest::RESULT_FAILED);
    ack.set_message("simulated failure");
  } else {
    ack.set_result(v1::AckChangeRequest::RESULT_APPLIED);
    *ack.mutable_after() = order.settings();
  }
  call->context.set_deadline(std::chrono::system_clock::now() + state_->ack_timeout);
  LoadGen::State* state = state_;
  agent_->stub->async()->AckChange(
      &call->context, &call->request, &call->response, [state, call](const grpc::Status& status) {
        {
          std::lock_guard<std::mutex> lock(state->mu);
          --state->outstanding;
          if (status.ok()) {
            ++state->orders_acked;
            if (call->request.result() == v1::AckChangeRequest::RESULT_FAILED) {
              ++state->orders_failed;
            }
            const auto now = Clock::now();
            state->ack_ms.push_back(Ms(now - call->received));
            state->acked_at_ms.push_back(Ms(now - state->start));
          } else {
            ++state->ack_errors;
            ++state->errors[CodeName(status.error_code())];
          }
        }
        state->changed.notify_all();
      });
}

void OnReportDone(LoadGen::State* state, Agent* agent, const ReportCall& call,
                  const grpc::Status& status) {
  {
    std::lock_guard<std::mutex> lock(state->mu);
    const auto now = Clock::now();
    agent->in_flight = false;
    agent->report_call.reset();
    --state->outstanding;
    if (status.ok()) {
      ++state->acked;
      state->last_ack = now;
      ++state->outcomes[v1::ReportResponse::Outcome_Name(call.response.outcome())];
      state->acked_ids.push_back(call.request.report_id());
      agent->pending.pop_front();
      if (agent->failing_since.has_value()) {
        state->recovery_ms.push_back(Ms(now - *agent->failing_since));
        agent->failing_since.reset();
      }
      agent->report_backoff.Reset();
      agent->next_report = now;
    } else {
      ++state->errors[CodeName(status.error_code())];
      const bool permanent = status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                             status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
      if (permanent) {
        // The real agent moves such a report to rejected/: it can never be stored.
        ++state->rejected;
        agent->pending.pop_front();
        agent->next_report = now;
      } else {
        ++state->retries;
        if (!agent->failing_since.has_value()) agent->failing_since = now;
        agent->next_report = now + agent->report_backoff.Next();
      }
    }
  }
  state->changed.notify_all();
}

}  // namespace

LoadGen::LoadGen(LoadGenOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

LoadGen::~LoadGen() = default;

absl::Status LoadGen::Setup() {
  if (options_.agents < 1) return absl::InvalidArgumentError("--agents: at least 1");
  if (options_.reports < 0) return absl::InvalidArgumentError("--reports: not negative");
  if (options_.connect_rate < 0) return absl::InvalidArgumentError("--connect_rate: not negative");
  if (options_.change_rate < 0 || options_.change_rate > 1) {
    return absl::InvalidArgumentError("--change_rate: a share from 0 to 1");
  }
  if (options_.ack_failure_share < 0 || options_.ack_failure_share > 1) {
    return absl::InvalidArgumentError("--ack_failure_share: a share from 0 to 1");
  }
  state_->ack_failure_share = options_.ack_failure_share;
  state_->ack_timeout = options_.report_timeout;
  ASSIGN_OR_RETURN(std::string ca_cert, ReadFile(options_.ca_cert));
  ASSIGN_OR_RETURN(std::string ca_key, ReadFile(options_.ca_key));
  ASSIGN_OR_RETURN(std::string trust, ReadFile(options_.trust));
  ASSIGN_OR_RETURN(auto issuer, AgentIssuer::Create(ca_cert, ca_key, std::move(trust)));
  const std::vector<std::string> collectors =
      absl::StrSplit(options_.collector, ',', absl::SkipWhitespace());
  RETURN_IF_ERROR(agent::CollectorTarget(collectors, "--collector").status());
  for (int i = 0; i < options_.agents; ++i) {
    const int number = options_.first_agent + i;
    std::string name =
        absl::StrCat(options_.name_prefix, number < 10000 ? "0" : "", number < 1000 ? "0" : "",
                     number < 100 ? "0" : "", number < 10 ? "0" : "", number);
    ASSIGN_OR_RETURN(TlsMaterial tls, issuer->Issue(name));
    auto agent =
        std::make_unique<Agent>(i, std::move(name), options_.seed * 1'000'003 + i, options_);
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride(options_.server_name);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.max_backoff.count()));
    args.SetInt(
        GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
        static_cast<int>(std::min(options_.max_backoff, std::chrono::milliseconds(1000)).count()));
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per simulated agent
    args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, absl::StrCat("smbfleet-loadgen/", kVersion));
    if (options_.source_addresses) {
      ASSIGN_OR_RETURN(std::string source, SourceAddress(number));
      RETURN_IF_ERROR(BindSourceAddress(source, args));
    }
    // Agent i starts on collector i % n and, as a real agent, moves on when that one fails.
    ASSIGN_OR_RETURN(std::string target,
                     agent::CollectorTarget(collectors, "--collector", static_cast<size_t>(i)));
    agent->channel = grpc::CreateCustomChannel(target, MutualTlsChannelCredentials(tls), args);
    agent->stub = v1::AgentService::NewStub(agent->channel);
    state_->agents.push_back(std::move(agent));
  }
  return absl::OkStatus();
}

absl::Status LoadGen::Run() {
  State& st = *state_;
  st.start = Clock::now();
  st.start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  const auto deadline = st.start + options_.max_seconds;
  auto next_curve = st.start;
  auto next_status = st.start;
  bool trimmed = false;
  const auto n = static_cast<int64_t>(st.agents.size());
  if (options_.connect_rate > 0) {
    // A ramp: agent i opens its first stream i / connect_rate seconds after the start.
    for (auto& a : st.agents) {
      a->next_watch =
          st.start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(a->index / options_.connect_rate));
    }
  }
  std::uniform_real_distribution<double> share(0, 1);
  int64_t produced = 0;
  std::vector<std::shared_ptr<ReportCall>> calls;
  std::vector<Agent*> call_agents;
  std::vector<WatchStream*> streams;
  bool all_acked = false;
  while (!stop_) {
    const auto now = Clock::now();
    if (now >= deadline) {
      st.timed_out = true;
      break;
    }
    // New reports, at the configured rate, round robin over the agents, once released.
    int64_t target = 0;
    if (!options_.hold_reports || release_) {
      std::lock_guard<std::mutex> lock(st.mu);
      if (!st.report_start.has_value()) st.report_start = now;
      const double elapsed = std::chrono::duration<double>(now - *st.report_start).count();
      target = options_.reports;
      if (options_.rate > 0) {
        target = std::min<int64_t>(options_.reports, static_cast<int64_t>(options_.rate * elapsed));
      }
    }
    std::vector<std::pair<Agent*, v1::ReportRequest>> fresh;
    for (; produced < target; ++produced) {
      Agent* a = st.agents[static_cast<size_t>(produced % n)].get();
      v1::ReportRequest r;
      r.set_report_id(agent::NewReportId());
      r.set_reason("schedule");
      // Under the lock: Ack draws from the same rng on a gRPC thread.
      std::lock_guard<std::mutex> lock(st.mu);
      if (!a->last_posture.has_value() || share(a->rng) < options_.change_rate) {
        *r.mutable_posture() = SimulatedPosture(a->name, a->shape, a->sequence++, a->rng,
                                                options_.settings_every, options_.session_reports);
      } else {
        (void)r.mutable_posture()->ParseFromString(*a->last_posture);  // it serialized it
        const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        r.mutable_posture()->mutable_collected_at()->set_seconds(micros / 1'000'000);
        r.mutable_posture()->mutable_collected_at()->set_nanos(
            static_cast<int32_t>(micros % 1'000'000) * 1000);
      }
      a->last_posture = r.posture().SerializeAsString();
      fresh.emplace_back(a, std::move(r));
    }
    calls.clear();
    call_agents.clear();
    streams.clear();
    {
      std::lock_guard<std::mutex> lock(st.mu);
      for (auto& [a, r] : fresh) a->pending.push_back(std::move(r));
      st.produced = produced;
      bool busy = false;
      for (auto& a : st.agents) {
        if (!a->pending.empty() || a->in_flight) busy = true;
        if (!a->in_flight && !a->pending.empty() && now >= a->next_report) {
          a->in_flight = true;
          ++st.attempts;
          ++st.outstanding;
          auto call = std::make_shared<ReportCall>();
          call->request = a->pending.front();
          call->context.set_deadline(std::chrono::system_clock::now() + options_.report_timeout);
          a->report_call = call;
          calls.push_back(std::move(call));
          call_agents.push_back(a.get());
        }
        if (options_.watch && a->stream == nullptr && now >= a->next_watch) {
          a->stream = new WatchStream(&st, a.get());
          ++st.streams_opened;
          ++st.outstanding;
          streams.push_back(a->stream);
        }
      }
      if (now >= next_curve) {
        st.curve.push_back({std::llround(Ms(now - st.start)), st.connected, st.acked});
        next_curve += options_.curve_interval;
      }
      if (!options_.status_file.empty() && now >= next_status) {
        next_status = now + kStatusInterval;
        nlohmann::json s = {{"connected", st.connected},
                            {"acked", st.acked},
                            {"produced", st.produced},
                            {"retries", st.retries},
                            {"orders_received", st.orders_received},
                            {"orders_acked", st.orders_acked}};
        (void)WriteFileAtomic(options_.status_file, s.dump() + "\n");
      }
      all_acked = produced == options_.reports && !busy;
    }
    // Started outside the lock: a callback may run before the call returns.
    for (size_t i = 0; i < calls.size(); ++i) {
      std::shared_ptr<ReportCall> call = calls[i];
      Agent* a = call_agents[i];
      State* state = &st;
      a->stub->async()->Report(
          &call->context, &call->request, &call->response,
          [state, a, call](const grpc::Status& status) { OnReportDone(state, a, *call, status); });
    }
    for (WatchStream* s : streams) s->Start();
    if (all_acked && !options_.watch) break;
    if (all_acked && !trimmed) {
      // Each report's request, its serialized and compressed copies and gRPC's buffers were
      // freed on many threads, and glibc keeps those pages (about 90 KB per simulated agent
      // after one report each). Once, when every report is acked: malloc_trim walks the heap
      // under its arenas' locks, which stalls the threads allocating meanwhile; with 10,000
      // agents (a heap of several GB) a trim every 10 s while reports were in flight went with
      // fewer reports acked in time (docs/scaling.md "The simulator's side").
      trimmed = true;
      agent::platform::ReleaseFreeHeap();
    }
    std::unique_lock<std::mutex> lock(st.mu);
    st.changed.wait_for(lock, kTick);
  }

  // Drain: end the streams and the report calls still waiting for an answer (again, for one
  // started just as we stopped). A call left running would outlive the agents it points into.
  const auto drain_deadline = Clock::now() + kDrainLimit;
  std::unique_lock<std::mutex> lock(st.mu);
  while (st.outstanding > 0 && Clock::now() < drain_deadline) {
    std::vector<std::shared_ptr<ReportCall>> waiting;
    for (auto& a : st.agents) {
      if (a->stream != nullptr) a->stream->Cancel();
      if (a->report_call != nullptr) waiting.push_back(a->report_call);
    }
    // Outside the lock: a cancelled call's callback, which takes it, may run in TryCancel.
    lock.unlock();
    for (const auto& call : waiting) call->context.TryCancel();
    lock.lock();
    st.changed.wait_for(lock, std::chrono::milliseconds(50));
  }
  st.elapsed_s = std::chrono::duration<double>(Clock::now() - st.start).count();
  if (!options_.acked_ids_file.empty()) {
    std::string ids;
    for (const std::string& id : st.acked_ids) absl::StrAppend(&ids, id, "\n");
    RETURN_IF_ERROR(WriteFileAtomic(options_.acked_ids_file, ids));
  }
  if (st.outstanding > 0) {
    return absl::DeadlineExceededError(absl::StrCat(st.outstanding,
                                                    " calls or streams did not end within ",
                                                    kDrainLimit.count(), " s of stopping"));
  }
  const int64_t unacked = st.produced - st.acked - st.rejected;
  if (unacked > 0 || st.produced < options_.reports) {
    return absl::DeadlineExceededError(
        absl::StrCat(unacked, " reports not acked and ", options_.reports - st.produced,
                     " not produced when stopped after ", std::llround(st.elapsed_s), " s"));
  }
  return absl::OkStatus();
}

nlohmann::json LoadGen::Summary() const {
  State& st = *state_;
  std::lock_guard<std::mutex> lock(st.mu);
  nlohmann::json out = {
      {"agents", st.agents.size()},
      {"reports", options_.reports},
      {"produced", st.produced},
      {"attempts", st.attempts},
      {"acked", st.acked},
      {"rejected", st.rejected},
      {"unacked", st.produced - st.acked - st.rejected},
      {"retries", st.retries},
      {"outcomes", st.outcomes},
      {"errors", st.errors},
      {"recovery_ms", Distribution(st.recovery_ms)},
      {"elapsed_s", st.elapsed_s},
      {"start_unix_ms", st.start_unix_ms},
      {"timed_out", st.timed_out},
  };
  if (options_.watch) {
    out["watch"] = {
        {"streams_opened", st.streams_opened},
        {"connected", st.connected},
        {"max_connected", st.max_connected},
        {"stream_ends", st.watch_ends},
        {"first_connect_ms", Distribution(st.first_connect_ms)},
        {"reconnect_ms", Distribution(st.reconnect_ms)},
        {"all_connected_ms", st.all_connected.has_value()
                                 ? nlohmann::json(std::llround(Ms(*st.all_connected - st.start)))
                                 : nlohmann::json(nullptr)},
    };
    nlohmann::json ack_ms = Distribution(st.ack_ms);
    ack_ms.erase("p90");
    out["orders"] = {{"received", st.orders_received},
                     {"acked", st.orders_acked},
                     {"failed", st.orders_failed},
                     {"ack_errors", st.ack_errors},
                     {"ack_ms", ack_ms},
                     {"acked_at_ms", Distribution(st.acked_at_ms)},
                     {"received_at_ms", Distribution(st.received_at_ms)}};
    if (!st.received_at_ms.empty()) {
      out["orders"]["received_at_ms"]["min"] =
          *std::min_element(st.received_at_ms.begin(), st.received_at_ms.end());
    }
  }
  // Reports acked per second from the first report made to the last ack.
  nlohmann::json phase = nullptr;
  if (st.report_start.has_value()) {
    phase = {{"start_ms", std::llround(Ms(*st.report_start - st.start))}};
    if (st.last_ack.has_value() && *st.last_ack > *st.report_start) {
      const double seconds = std::chrono::duration<double>(*st.last_ack - *st.report_start).count();
      phase["last_ack_ms"] = std::llround(Ms(*st.last_ack - st.start));
      phase["reports_per_s"] = std::round(static_cast<double>(st.acked) / seconds * 10) / 10;
    }
  }
  out["report_phase"] = phase;
  out["curve"] = st.curve;  // [ms since start, connected streams, acked reports]
  return out;
}

}  // namespace smbfleet::loadgen
