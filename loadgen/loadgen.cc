#include "loadgen/loadgen.h"

#include <algorithm>
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
#include "agent/core/agent.h"
#include "agent/core/backoff.h"
#include "common/files.h"
#include "common/status_macros.h"
#include "common/tls.h"
#include "common/version.h"
#include "grpcpp/grpcpp.h"
#include "loadgen/sim_identity.h"
#include "loadgen/sim_posture.h"
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

struct Agent {
  Agent(int i, std::string n, uint64_t seed, const LoadGenOptions& o)
      : index(i),
        name(std::move(n)),
        report_backoff(o.base_backoff, o.max_backoff, seed),
        rng(seed),
        watch_backoff(o.base_backoff, o.max_backoff, seed ^ 0x5bd1e995) {}

  int index;
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::AgentService::Stub> stub;
  // Reports: kept until acked, oldest first, one in flight at a time (as the spool flushes).
  std::deque<v1::ReportRequest> pending;
  bool in_flight = false;
  Clock::time_point next_report{};
  agent::Backoff report_backoff;
  std::optional<Clock::time_point> failing_since;
  uint64_t sequence = 0;
  std::mt19937_64 rng;
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
  int64_t streams_opened = 0;
  nlohmann::json curve = nlohmann::json::array();
  double elapsed_s = 0;
  bool timed_out = false;
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

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!agent_->connected) {
        agent_->connected = true;
        ++state_->connected;
        state_->max_connected = std::max(state_->max_connected, state_->connected);
        const auto now = Clock::now();
        if (agent_->disconnected_at.has_value()) {
          state_->reconnect_ms.push_back(Ms(now - *agent_->disconnected_at));
          agent_->disconnected_at.reset();
        } else {
          state_->first_connect_ms.push_back(Ms(now - state_->start));
        }
        agent_->watch_backoff.Reset();
      }
    }
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

void OnReportDone(LoadGen::State* state, Agent* agent, const ReportCall& call,
                  const grpc::Status& status) {
  {
    std::lock_guard<std::mutex> lock(state->mu);
    const auto now = Clock::now();
    agent->in_flight = false;
    --state->outstanding;
    if (status.ok()) {
      ++state->acked;
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
  ASSIGN_OR_RETURN(std::string ca_cert, ReadFile(options_.ca_cert));
  ASSIGN_OR_RETURN(std::string ca_key, ReadFile(options_.ca_key));
  ASSIGN_OR_RETURN(std::string trust, ReadFile(options_.trust));
  ASSIGN_OR_RETURN(auto issuer, AgentIssuer::Create(ca_cert, ca_key, std::move(trust)));
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
    agent->channel =
        grpc::CreateCustomChannel(options_.collector, MutualTlsChannelCredentials(tls), args);
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
  const auto n = static_cast<int64_t>(st.agents.size());
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
    // New reports, at the configured rate, round robin over the agents.
    const double elapsed = std::chrono::duration<double>(now - st.start).count();
    int64_t target = options_.reports;
    if (options_.rate > 0) {
      target = std::min<int64_t>(options_.reports, static_cast<int64_t>(options_.rate * elapsed));
    }
    std::vector<std::pair<Agent*, v1::ReportRequest>> fresh;
    for (; produced < target; ++produced) {
      Agent* a = st.agents[static_cast<size_t>(produced % n)].get();
      v1::ReportRequest r;
      r.set_report_id(agent::NewReportId());
      r.set_reason("schedule");
      *r.mutable_posture() = SimulatedPosture(a->name, a->sequence++, a->rng);
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
                            {"retries", st.retries}};
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
    std::unique_lock<std::mutex> lock(st.mu);
    st.changed.wait_for(lock, kTick);
  }

  // Drain: end the streams (again, for one started just as we stopped), let calls finish.
  const auto drain_deadline = Clock::now() + kDrainLimit;
  std::unique_lock<std::mutex> lock(st.mu);
  while (st.outstanding > 0 && Clock::now() < drain_deadline) {
    for (auto& a : st.agents) {
      if (a->stream != nullptr) a->stream->Cancel();
    }
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
    };
  }
  out["curve"] = st.curve;  // [ms since start, connected streams, acked reports]
  return out;
}

}  // namespace smbfleet::loadgen
