// The console's reads through gRPC, as an operator's client makes them: AdminService
// GetCompliance, GetFleetOverview and ListHosts (host search, filters in turn) over one
// mutual-TLS channel, one call at a time, --samples of each after --warmup. Prints one JSON
// object with p50/p95/max per call in milliseconds. fleet_queries.sh runs it against a seeded
// collector.
//
//   fleet_queries_bench --collector HOST:PORT --cert F --key F --ca F [--samples 200]
//                       [--warmup 5] [--server_name localhost]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "smbfleet/v1/admin.grpc.pb.h"

namespace {

namespace v1 = smbfleet::v1;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

double Round(double ms) { return std::round(ms * 100) / 100; }

// One call kind: `call` returns the gRPC status of one request (the i-th).
struct Kind {
  std::string name;
  std::function<grpc::Status(int i)> call;
};

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"samples", "200"}, {"warmup", "5"}, {"server_name", "localhost"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) {
      std::cerr << "fleet_queries_bench: unexpected argument '" << name << "'\n";
      return 2;
    }
    flags[name.substr(2)] = argv[i + 1];
  }
  int samples = 0;
  int warmup = 0;
  if (!absl::SimpleAtoi(flags["samples"], &samples) || samples < 1 ||
      !absl::SimpleAtoi(flags["warmup"], &warmup) || warmup < 0) {
    std::cerr << "fleet_queries_bench: --samples and --warmup take a count\n";
    return 2;
  }
  for (const char* required : {"collector", "cert", "key", "ca"}) {
    if (flags[required].empty()) {
      std::cerr << "fleet_queries_bench: --" << required << " is required\n";
      return 2;
    }
  }
  auto tls = smbfleet::LoadTls({flags["cert"], flags["key"], flags["ca"]});
  if (!tls.ok()) {
    std::cerr << "fleet_queries_bench: " << tls.status() << "\n";
    return 1;
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(flags["server_name"]);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = v1::AdminService::NewStub(grpc::CreateCustomChannel(
      flags["collector"], smbfleet::MutualTlsChannelCredentials(*tls), args));

  // Host searches in turn: a name substring, a failing rule, an OS, a platform, a plain page.
  const std::vector<std::function<void(v1::ListHostsRequest*)>> searches = {
      [](v1::ListHostsRequest* r) { r->set_query("0042"); },
      [](v1::ListHostsRequest* r) { r->set_failing_rule("*"); },
      [](v1::ListHostsRequest* r) { r->set_os("2022"); },
      [](v1::ListHostsRequest* r) { r->set_platform(v1::PLATFORM_SAMBA); },
      [](v1::ListHostsRequest* r) { r->set_page_token("sim-05"); },
  };
  std::vector<Kind> kinds = {
      {"compliance",
       [&](int) {
         grpc::ClientContext ctx;
         v1::GetComplianceResponse out;
         return stub->GetCompliance(&ctx, v1::GetComplianceRequest(), &out);
       }},
      {"fleet_overview",
       [&](int) {
         grpc::ClientContext ctx;
         v1::GetFleetOverviewResponse out;
         return stub->GetFleetOverview(&ctx, v1::GetFleetOverviewRequest(), &out);
       }},
      {"host_search",
       [&](int i) {
         grpc::ClientContext ctx;
         v1::ListHostsRequest req;
         req.set_page_size(50);
         searches[static_cast<size_t>(i) % searches.size()](&req);
         v1::ListHostsResponse out;
         return stub->ListHosts(&ctx, req, &out);
       }},
  };

  nlohmann::json out = nlohmann::json::object();
  int failures = 0;
  for (const Kind& kind : kinds) {
    for (int i = 0; i < warmup; ++i) kind.call(i);
    std::vector<double> ms;
    std::map<std::string, int> errors;
    for (int i = 0; i < samples; ++i) {
      const auto start = Clock::now();
      grpc::Status status = kind.call(i);
      const double took = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!status.ok()) {
        ++errors[absl::StrCat(status.error_code(), ": ", status.error_message())];
        ++failures;
        continue;
      }
      ms.push_back(took);
    }
    out[kind.name] = {{"samples", ms.size()},
                      {"p50_ms", Round(Percentile(ms, 0.5))},
                      {"p95_ms", Round(Percentile(ms, 0.95))},
                      {"max_ms", Round(ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()))},
                      {"errors", errors}};
  }
  std::cout << out.dump() << std::endl;
  return failures == 0 ? 0 : 1;
}
