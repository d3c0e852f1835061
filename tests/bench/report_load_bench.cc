// An independent load client for the collector's report path: many hosts, each with its own
// agent certificate and its own mutual TLS connection, sending AgentService.Report as fast as
// the collector answers. It speaks only the public gRPC contract, so it measures a collector
// from the outside. Prints one JSON line per phase:
//
//   first      every host reports once (stored)
//   unchanged  the same posture again under new report ids (the agents' hourly case)
//   digest     the same, as digest-only reports (what agents send once their posture is acked)
//   changed    a posture that differs each time (a session comes and goes)
//
//   report_load_bench --target 127.0.0.1:PORT --pki DIR --posture FILE.json
//                     [--hosts 200] [--reports 2000] [--concurrency 16] [--label TEXT]
//
// DIR holds ca.pem and agent-<host>.pem/.key for hosts named load-0000, load-0001, ...
// (deploy/ca.sh dev DIR load-0000 ...). Bounded by --reports per phase; a phase gives up after
// two minutes.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/json.h"
#include "common/posture_digest.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "smbfleet/v1/agent.grpc.pb.h"

namespace smbfleet {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;
  std::string pki;
  std::string posture_file;
  std::string label;
  int hosts = 200;
  int reports = 2000;
  int concurrency = 16;
  // The phases to run, in their fixed order (first, unchanged, digest, changed); a later phase
  // run alone needs the hosts' first reports stored by an earlier run.
  std::set<std::string> phases = {"first", "unchanged", "digest", "changed"};
  size_t posture_json_bytes = 0;  // the posture as the agent prints it (--format=json)
};

std::string HostName(int i) { return absl::StrFormat("load-%04d", i); }

// A v4-shaped UUID that is unique per (phase, sequence) and per run.
std::string ReportId(uint32_t run, uint32_t phase, uint64_t seq) {
  return absl::StrFormat("%08x-%04x-4%03x-8%03x-%012x", run, phase & 0xffff,
                         static_cast<uint32_t>((seq >> 48) & 0xfff),
                         static_cast<uint32_t>((seq >> 36) & 0xfff), seq & 0xffffffffffffULL);
}

// Attempts per report: the first and resends after UNAVAILABLE, 50 ms after the first, each
// wait twice the one before up to 1 s (about 3.4 s in all; an agent goes on for longer, up to
// collector.max_backoff between tries).
constexpr int kAttempts = 8;
constexpr std::chrono::milliseconds kFirstResendAfter{50};
constexpr std::chrono::milliseconds kLongestResendWait{1000};
// Distinct answer messages kept per phase (each with its count).
constexpr size_t kMessagesKept = 8;

// Counts `status` under "CODE: message" in `said`, keeping at most kMessagesKept distinct ones.
void CountSaid(const grpc::Status& status, std::map<std::string, int>* said) {
  std::string key = absl::StrCat(status.error_code(), ": ", status.error_message());
  if (said->count(key) > 0 || said->size() < kMessagesKept) ++(*said)[key];
}

struct PhaseResult {
  std::string phase;
  int reports = 0;
  int errors = 0;   // reports not answered OK after every attempt
  int retries = 0;  // resends after UNAVAILABLE
  std::map<std::string, int> outcomes;
  std::map<std::string, int> error_codes;
  // What the answers that were resent or failed said, by code and message (a few distinct).
  std::map<std::string, int> resent_after;
  std::map<std::string, int> errors_said;
  double seconds = 0;
  double cpu_seconds = 0;  // this client's own CPU (user and system) during the phase
  std::vector<double> latencies_ms;
};

// The CPU this process has used so far, user and system, in seconds.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

class LoadClient {
 public:
  LoadClient(Options options, v1::Posture posture)
      : options_(std::move(options)), posture_(std::move(posture)) {}

  absl::Status Connect() {
    for (int i = 0; i < options_.hosts; ++i) {
      const std::string host = HostName(i);
      auto tls = LoadTls({absl::StrCat(options_.pki, "/agent-", host, ".pem"),
                          absl::StrCat(options_.pki, "/agent-", host, ".key"),
                          absl::StrCat(options_.pki, "/ca.pem")});
      if (!tls.ok()) return tls.status();
      grpc::ChannelArguments args;
      args.SetSslTargetNameOverride("localhost");
      args.SetMaxSendMessageSize(64 << 20);
      // One connection per host, as real agents have.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      auto channel =
          grpc::CreateCustomChannel(options_.target, MutualTlsChannelCredentials(*tls), args);
      stubs_.push_back(v1::AgentService::NewStub(channel));
    }
    return absl::OkStatus();
  }

  // Sends `count` reports spread over the hosts round-robin; `vary` makes each posture differ;
  // `digest_only` sends each host's posture as its digest only.
  PhaseResult Run(const std::string& phase, uint32_t phase_no, int count, bool vary,
                  bool digest_only = false) {
    std::vector<std::string> digests;
    if (digest_only) {
      v1::Posture p = posture_;
      for (int i = 0; i < options_.hosts; ++i) {
        p.mutable_host()->set_hostname(HostName(i));
        digests.push_back(PostureDigest(p));
      }
    }
    PhaseResult result;
    result.phase = phase;
    std::atomic<int> next{0};
    std::mutex mu;
    const auto give_up = Clock::now() + std::chrono::minutes(2);
    const double cpu_start = ProcessCpuSeconds();
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    workers.reserve(static_cast<size_t>(options_.concurrency));
    for (int w = 0; w < options_.concurrency; ++w) {
      workers.emplace_back([&] {
        v1::ReportRequest request;
        *request.mutable_posture() = posture_;
        request.set_reason("load");
        for (int seq = next++; seq < count && Clock::now() < give_up; seq = next++) {
          const int host = seq % options_.hosts;
          request.set_report_id(ReportId(run_, phase_no, static_cast<uint64_t>(seq)));
          if (digest_only) {
            request.clear_posture();
            request.set_posture_digest(digests[static_cast<size_t>(host)]);
            *request.mutable_collected_at() = posture_.collected_at();
          } else {
            request.mutable_posture()->mutable_host()->set_hostname(HostName(host));
          }
          if (vary) {
            // A session that exists in this report only: the content digest changes.
            request.mutable_posture()->clear_sessions();
            *request.mutable_posture()->mutable_sessions() = posture_.sessions();
            auto* s = request.mutable_posture()->add_sessions();
            s->set_session_id(absl::StrCat(1000000 + seq));
            s->set_client_address(absl::StrCat("192.0.2.", seq % 250 + 1));
            s->set_dialect(v1::DIALECT_SMB_3_1_1);
          }
          // UNAVAILABLE means "not stored, send it again" (a busy collector or database, or a
          // connection gRPC failed to make: gRPC 1.51 now and then misreads a connect still in
          // progress as failed, and its channel then waits about a second before the next
          // try): the report is resent as an agent resends it, and counted in `retries`.
          grpc::Status status;
          v1::ReportResponse response;
          double ms = 0;
          int retries = 0;
          for (int attempt = 1;; ++attempt) {
            grpc::ClientContext context;
            context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
            const auto sent = Clock::now();
            status = stubs_[host]->Report(&context, request, &response);
            ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
            if (status.error_code() != grpc::StatusCode::UNAVAILABLE || attempt == kAttempts) {
              break;
            }
            {
              std::lock_guard<std::mutex> lock(mu);
              CountSaid(status, &result.resent_after);
            }
            ++retries;
            std::this_thread::sleep_for(
                std::min(kFirstResendAfter * (1 << (attempt - 1)), kLongestResendWait));
          }
          std::lock_guard<std::mutex> lock(mu);
          result.retries += retries;
          result.latencies_ms.push_back(ms);
          if (status.ok()) {
            ++result.reports;
            ++result.outcomes[v1::ReportResponse::Outcome_Name(response.outcome())];
          } else {
            ++result.errors;
            ++result.error_codes[absl::StrCat(status.error_code())];
            CountSaid(status, &result.errors_said);
          }
        }
      });
    }
    for (auto& t : workers) t.join();
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.cpu_seconds = ProcessCpuSeconds() - cpu_start;
    return result;
  }

  nlohmann::json ToJsonLine(const PhaseResult& r) const {
    nlohmann::json j;
    j["bench"] = "report_load";
    j["label"] = options_.label;
    j["phase"] = r.phase;
    j["hosts"] = options_.hosts;
    j["concurrency"] = options_.concurrency;
    j["postureBytes"] = posture_.ByteSizeLong();
    j["postureJsonBytes"] = options_.posture_json_bytes;
    j["reports"] = r.reports;
    j["errors"] = r.errors;
    j["retries"] = r.retries;
    j["errorCodes"] = r.error_codes;
    j["errorsSaid"] = r.errors_said;
    j["resentAfter"] = r.resent_after;
    j["outcomes"] = r.outcomes;
    j["seconds"] = r.seconds;
    j["reportsPerSecond"] = r.seconds > 0 ? r.reports / r.seconds : 0;
    j["p50Ms"] = Percentile(r.latencies_ms, 0.50);
    j["p99Ms"] = Percentile(r.latencies_ms, 0.99);
    // What the client itself takes of the shared cores, per answered report.
    j["clientCpuSeconds"] = r.cpu_seconds;
    j["clientCpuUsPerReport"] = r.reports > 0 ? r.cpu_seconds * 1e6 / r.reports : 0;
    return j;
  }

 private:
  Options options_;
  v1::Posture posture_;
  uint32_t run_ = static_cast<uint32_t>(std::chrono::system_clock::now().time_since_epoch() /
                                        std::chrono::milliseconds(1));
  std::vector<std::unique_ptr<v1::AgentService::Stub>> stubs_;
};

int Usage(const std::string& problem) {
  std::cerr << "report_load_bench: " << problem << "\n"
            << "usage: report_load_bench --target HOST:PORT --pki DIR --posture FILE.json "
               "[--hosts N] [--reports N] [--concurrency N] [--label TEXT] "
               "[--phases first,unchanged,digest,changed]\n";
  return 2;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto take = [&](const char* name) -> const char* {
      if (a != name) return nullptr;
      if (i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    auto number = [&](const char* text, int* out) {
      return text != nullptr && absl::SimpleAtoi(text, out) && *out > 0;
    };
    if (const char* v = take("--target")) {
      o.target = v;
    } else if (const char* v = take("--pki")) {
      o.pki = v;
    } else if (const char* v = take("--posture")) {
      o.posture_file = v;
    } else if (const char* v = take("--label")) {
      o.label = v;
    } else if (const char* v = take("--phases")) {
      o.phases.clear();
      for (absl::string_view p : absl::StrSplit(v, ',', absl::SkipEmpty())) {
        if (p != "first" && p != "unchanged" && p != "digest" && p != "changed") {
          return Usage(
              absl::StrCat("--phases: '", p, "' is not one of first, unchanged, digest, changed"));
        }
        o.phases.emplace(p);
      }
      if (o.phases.empty()) return Usage("--phases needs at least one phase");
    } else if (a == "--hosts") {
      if (!number(take("--hosts"), &o.hosts)) return Usage("--hosts needs a positive number");
    } else if (a == "--reports") {
      if (!number(take("--reports"), &o.reports)) return Usage("--reports needs a positive number");
    } else if (a == "--concurrency") {
      if (!number(take("--concurrency"), &o.concurrency)) {
        return Usage("--concurrency needs a positive number");
      }
    } else {
      return Usage(absl::StrCat("unknown argument '", a, "'"));
    }
  }
  if (o.target.empty() || o.pki.empty() || o.posture_file.empty()) {
    return Usage("--target, --pki and --posture are required");
  }
  auto text = ReadFile(o.posture_file, 64 << 20);
  if (!text.ok()) return Usage(std::string(text.status().message()));
  o.posture_json_bytes = text->size();
  v1::Posture posture;
  if (auto s = FromJson(*text, o.posture_file, &posture, /*ignore_unknown=*/true); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  LoadClient client(o, std::move(posture));
  if (auto s = client.Connect(); !s.ok()) return Usage(std::string(s.message()));

  bool failed = false;
  auto phase = [&](const std::string& name, uint32_t no, int count, bool vary,
                   bool digest_only = false) {
    if (o.phases.count(name) == 0) return;
    PhaseResult r = client.Run(name, no, count, vary, digest_only);
    std::cout << client.ToJsonLine(r).dump() << std::endl;
    if (r.errors > 0 || r.reports != count) failed = true;
  };
  phase("first", 1, o.hosts, /*vary=*/false);
  phase("unchanged", 2, o.reports, /*vary=*/false);
  phase("digest", 4, o.reports, /*vary=*/false, /*digest_only=*/true);
  phase("changed", 3, o.reports, /*vary=*/true);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace smbfleet

int main(int argc, char** argv) { return smbfleet::Main(argc, argv); }
