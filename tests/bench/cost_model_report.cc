// Predicted vs measured for the cost model: reads the measurements that
// cost_model_validate.sh took against a real smbd on loopback, runs the agent's crypto benchmark
// on this host (as every agent does), measures the loopback round trip, predicts every posture
// with the cost model and prints a table and one JSON document.
//
//   cost_model_report --measured=FILE [--status_dir=DIR] [--statistic=median|best]
//                     [--calibrate] [--markdown]
//                     [--link_mbit=MBIT --rtt_ms=MS [--client=smbclient|windows]]
//
// With --link_mbit and --rtt_ms the runs went through a link of that rate and round trip
// (cost_model_validate_link.sh, through smbfleet-delay-link): the host is predicted with that
// link, that RTT and the window of --client (default smbclient), and every posture, "none"
// included, is judged on its absolute throughput and server CPU per byte (not relative to
// "none"), and the order of the postures by each of the two is set beside the model's.
//
// Each posture is judged by one figure over its runs: the median (default), or with
// --statistic=best the least disturbed run (highest throughput, lowest CPU), which suits a
// machine busy with other work, where that work only ever adds CPU time and takes throughput.
//
// --calibrate also prints the parameters fitted from these measurements (what
// policy/cost/parameters.cc holds, from a calibration run); validate with a different run.
//
// Measured lines (JSON, one per run): {"posture": "enc-aes-128-gcm", "workload": "large" |
// "small" | "connect", "run": 1, "bytes": N, "files": N, "seconds": S, "serverCpu": S,
// "clientCpu": S}. "connect" runs (session setup only) are subtracted from the small-file runs.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "agent/bench/crypto_bench.h"
#include "agent/bench/memory_bench.h"
#include "nlohmann/json.hpp"
#include "policy/cost/cost_model.h"

namespace {

namespace v1 = ::smbfleet::v1;
namespace cost = ::smbfleet::policy::cost;

struct Posture {
  const char* name;
  cost::ProtectionLevel level;
  const char* smbstatus_signing;     // expected tcon signing cipher ("-" = none)
  const char* smbstatus_encryption;  // expected tcon encryption cipher
};

const std::vector<Posture>& Postures() {
  static const auto* postures = new std::vector<Posture>{
      {"none", cost::ProtectionLevel::None(), "-", "-"},
      {"sign-hmac-sha256", cost::ProtectionLevel::Signing(v1::HMAC_SHA256), "HMAC-SHA256", "-"},
      {"sign-aes-128-cmac", cost::ProtectionLevel::Signing(v1::AES_128_CMAC), "AES-128-CMAC", "-"},
      {"sign-aes-128-gmac", cost::ProtectionLevel::Signing(v1::AES_128_GMAC), "AES-128-GMAC", "-"},
      {"enc-aes-128-ccm", cost::ProtectionLevel::Encryption(v1::AES_128_CCM), "", "AES-128-CCM"},
      {"enc-aes-128-gcm", cost::ProtectionLevel::Encryption(v1::AES_128_GCM), "", "AES-128-GCM"},
      {"enc-aes-256-gcm", cost::ProtectionLevel::Encryption(v1::AES_256_GCM), "", "AES-256-GCM"},
      {"enc-aes-256-ccm", cost::ProtectionLevel::Encryption(v1::AES_256_CCM), "", "AES-256-CCM"},
  };
  return *postures;
}

struct Run {
  double bytes = 0, files = 0, seconds = 0, server_cpu = 0, client_cpu = 0;
};

struct Stats {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

// Median loopback TCP round trip (1 byte each way, TCP_NODELAY), the "RTT" of the lab.
double LoopbackRttSeconds() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listener >= 0) close(listener);
    return 0;
  }
  constexpr int kTrips = 2000;
  std::thread echo([listener] {
    int c = accept(listener, nullptr, nullptr);
    if (c < 0) return;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char b;
    for (int i = 0; i < kTrips && read(c, &b, 1) == 1; ++i) {
      if (write(c, &b, 1) != 1) break;
    }
    close(c);
  });
  int s = socket(AF_INET, SOCK_STREAM, 0);
  std::vector<double> trips;
  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char b = 'x';
    for (int i = 0; i < kTrips; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (write(s, &b, 1) != 1 || read(s, &b, 1) != 1) break;
      trips.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (s >= 0) close(s);
  echo.join();
  close(listener);
  return Summarize(trips).median;
}

// The tcon entry of the lab share in a `smbstatus --json` capture.
std::optional<std::pair<std::string, std::string>> TconCiphers(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.contains("tcons") || !doc["tcons"].is_object()) {
    return std::nullopt;
  }
  for (const auto& [id, tcon] : doc["tcons"].items()) {
    if (tcon.value("service", "") != "demo") continue;
    std::string signing = tcon["signing"].value("cipher", "?");
    std::string encryption = tcon["encryption"].value("cipher", "?");
    // smbstatus 4.17 prints "???" as the tcon cipher of the AES-256 ciphers; the session entry
    // names them.
    if (encryption == "???" && doc.contains("sessions")) {
      std::string session_id = tcon.value("session_id", "");
      for (const auto& [sid, session] : doc["sessions"].items()) {
        if (session.value("session_id", "") == session_id) {
          encryption = session["encryption"].value("cipher", "?") + " (session)";
        }
      }
    }
    return std::make_pair(signing, encryption);
  }
  return std::nullopt;
}

nlohmann::json HostCryptoJson(const cost::HostProfile& host) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [alg, c] : host.crypto) {
    out[cost::AlgorithmName(alg)] = {{"secondsPerCall", c.seconds_per_call},
                                     {"secondsPerByte", c.seconds_per_byte},
                                     {"allCoreSpeedup", c.all_core_speedup}};
  }
  return out;
}

double ErrorPercent(double predicted, double measured) {
  return measured > 0 ? (predicted / measured - 1) * 100 : 0;
}

// FLAG=VALUE with VALUE a number in (low, high]; false (and a message naming the input) else.
bool ParseNumber(absl::string_view flag, absl::string_view text, double low, double high,
                 double* out) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || errno != 0 || *end != '\0' || !(value > low) || !(value <= high)) {
    std::fprintf(stderr, "%s: '%s' is not a number in (%g, %g]\n", std::string(flag).c_str(),
                 copy.c_str(), low, high);
    return false;
  }
  *out = value;
  return true;
}

// How the measured order of the postures by one figure compares with the model's. A pair
// counts only when the per-run ranges of the two postures do not overlap (apart by more than
// the noise); a pair the model predicts within 1% of each other is a predicted tie, counted
// apart from the discordant ones.
struct Ordering {
  int pairs = 0, decided = 0, concordant = 0, predicted_ties = 0;
  std::vector<std::string> discordant;
};

template <typename Row, typename Predicted, typename Measured>
Ordering CompareOrder(const std::vector<Row>& table, Predicted predicted, Measured measured) {
  Ordering o;
  for (size_t i = 0; i < table.size(); ++i) {
    for (size_t k = i + 1; k < table.size(); ++k) {
      const Row& a = table[i];
      const Row& b = table[k];
      if (a.workload != b.workload) continue;
      ++o.pairs;
      const Stats& ma = measured(a);
      const Stats& mb = measured(b);
      if (!(ma.min > mb.max || mb.min > ma.max)) continue;
      ++o.decided;
      double pa = predicted(a), pb = predicted(b);
      if (std::abs(pa - pb) <= 0.01 * std::max(std::abs(pa), std::abs(pb))) {
        ++o.predicted_ties;
      } else if ((pa - pb) * (ma.median - mb.median) > 0) {
        ++o.concordant;
      } else {
        o.discordant.push_back(absl::StrCat(a.workload, ": ", a.posture, " vs ", b.posture));
      }
    }
  }
  return o;
}

nlohmann::json OrderingJson(const Ordering& o) {
  return {{"pairs", o.pairs},
          {"pairsSeparatedByMoreThanNoise", o.decided},
          {"concordant", o.concordant},
          {"predictedTies", o.predicted_ties},
          {"discordant", o.discordant}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string measured_path, status_dir;
  bool calibrate = false, markdown = false, best = false;
  double link_mbit = 0, rtt_ms = 0;
  cost::ClientKind client = cost::ClientKind::kSmbclient;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--measured=")) {
      measured_path = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--status_dir=")) {
      status_dir = std::string(arg);
    } else if (arg == "--statistic=median") {
      best = false;
    } else if (arg == "--statistic=best") {
      best = true;
    } else if (absl::StartsWith(arg, "--statistic=")) {
      std::fprintf(stderr, "%s: want --statistic=median or --statistic=best\n", argv[i]);
      return 2;
    } else if (arg == "--calibrate") {
      calibrate = true;
    } else if (arg == "--markdown") {
      markdown = true;
    } else if (absl::ConsumePrefix(&arg, "--link_mbit=")) {
      if (!ParseNumber("--link_mbit", arg, 0, 1e6, &link_mbit)) return 2;
    } else if (absl::ConsumePrefix(&arg, "--rtt_ms=")) {
      if (!ParseNumber("--rtt_ms", arg, 0, 10000, &rtt_ms)) return 2;
    } else if (absl::ConsumePrefix(&arg, "--client=")) {
      absl::StatusOr<cost::ClientKind> parsed = cost::ParseClientKind(arg);
      if (!parsed.ok()) {
        std::fprintf(stderr, "--client: %s\n", std::string(parsed.status().message()).c_str());
        return 2;
      }
      client = *parsed;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return 2;
    }
  }
  if (measured_path.empty()) {
    std::fprintf(stderr,
                 "usage: cost_model_report --measured=FILE [--status_dir=DIR] "
                 "[--statistic=median|best] [--calibrate] [--markdown] "
                 "[--link_mbit=MBIT --rtt_ms=MS [--client=smbclient|windows]]\n");
    return 2;
  }
  if ((link_mbit > 0) != (rtt_ms > 0)) {
    std::fprintf(stderr, "--link_mbit and --rtt_ms go together: the link's rate and its RTT\n");
    return 2;
  }
  const bool link = link_mbit > 0;

  // posture -> workload -> run number -> measurement
  std::map<std::string, std::map<std::string, std::map<int, Run>>> runs;
  std::ifstream in(measured_path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", measured_path.c_str());
    return 1;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("posture") || !j.contains("workload") ||
        !j["posture"].is_string() || !j["workload"].is_string()) {
      std::fprintf(stderr, "%s:%d: not a measurement line\n", measured_path.c_str(), line_no);
      return 1;
    }
    Run r;
    for (auto [key, field] :
         {std::pair{"bytes", &r.bytes}, std::pair{"files", &r.files},
          std::pair{"seconds", &r.seconds}, std::pair{"serverCpu", &r.server_cpu},
          std::pair{"clientCpu", &r.client_cpu}}) {
      if (j.contains(key)) {
        if (!j[key].is_number() || j[key].get<double>() < 0) {
          std::fprintf(stderr, "%s:%d: %s: want a number >= 0\n", measured_path.c_str(), line_no,
                       key);
          return 1;
        }
        *field = j[key].get<double>();
      }
    }
    int run_number = j.contains("run") && j["run"].is_number_integer() ? j["run"].get<int>() : 0;
    runs[j["posture"].get<std::string>()][j["workload"].get<std::string>()][run_number] = r;
  }

  // The host as its agent would report it: own benchmark, cores; the lab link is loopback.
  smbfleet::agent::bench::BenchOptions bench_options;
  bench_options.lowest_priority = false;  // measured beside the transfers, same footing
  auto bench = smbfleet::agent::bench::RunCryptoBenchmark(bench_options);
  if (!bench.ok()) {
    std::fprintf(stderr, "crypto benchmark: %s\n", bench.status().ToString().c_str());
    return 1;
  }
  v1::Posture host_posture;
  host_posture.mutable_host()->set_hostname(link ? "link-lab" : "loopback-lab");
  host_posture.mutable_host()->set_platform(v1::PLATFORM_SAMBA);
  host_posture.mutable_host()->set_logical_cores(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& b : *bench) *host_posture.add_benchmarks() = b;
  smbfleet::agent::bench::MemoryBenchOptions memory_options;
  memory_options.lowest_priority = false;
  auto memory = smbfleet::agent::bench::RunPageFaultBenchmark(memory_options);
  if (!memory.ok()) {
    std::fprintf(stderr, "page-fault benchmark: %s\n", memory.status().ToString().c_str());
    return 1;
  }
  *host_posture.mutable_memory_benchmark() = *memory;
  const double rtt = link ? rtt_ms / 1000 : LoopbackRttSeconds();
  (*host_posture.mutable_host()->mutable_labels())["link_speed"] = "100Gbit";  // loopback
  (*host_posture.mutable_host()->mutable_labels())["rtt_ms"] = absl::StrCat(rtt * 1000);
  cost::HostProfile host = cost::ProfileFromPosture(host_posture);
  // Through the link, client and server still share this host's cores.
  host.client_on_host = true;
  if (link) {
    host.link_bits_per_second = link_mbit * 1e6;
    host.rtt_seconds = rtt;
    host.rtt_source = "configured link";
  }

  // The workloads the script ran.
  cost::Workload large = cost::Workload::LargeSequential();
  if (link) large.client = client;
  cost::Workload small = cost::Workload::SmallFiles();
  small.ops_per_file = 3;  // smbclient mget: CREATE, QUERY_INFO, CLOSE besides the READ
  for (const auto& [n, r] : runs["none"]["small"]) {
    if (r.files > 0) small.file_bytes = static_cast<uint64_t>(r.bytes / r.files);
  }

  // Per run: throughput and CPU seconds per byte, session setup ("connect") subtracted.
  struct Derived {
    double tput = 0, server = 0, client = 0;
  };
  auto derive = [&](const std::string& posture, const std::string& workload,
                    int run) -> std::optional<Derived> {
    auto& by_run = runs[posture][workload];
    auto it = by_run.find(run);
    if (it == by_run.end() || it->second.bytes <= 0) return std::nullopt;
    const Run& r = it->second;
    Run connect;
    if (auto c = runs[posture]["connect"].find(run); c != runs[posture]["connect"].end()) {
      connect = c->second;
    }
    // smbclient's own rate (large) excludes session setup already; the wall time (small)
    // does not.
    double seconds = r.seconds - (workload == "small" ? connect.seconds : 0);
    // A session setup that took longer than the whole small-file run leaves nothing to measure.
    if (seconds <= 0.2 * r.seconds) return std::nullopt;
    Derived d;
    d.tput = r.bytes / seconds;
    d.server = std::max(0.0, r.server_cpu - connect.server_cpu) / r.bytes;
    d.client = std::max(0.0, r.client_cpu - connect.client_cpu) / r.bytes;
    return d;
  };

  struct Row {
    std::string posture, workload, observed, predicted_limit;
    size_t n = 0;
    double predicted_tput = 0, predicted_server = 0;
    Stats tput, server;          // absolute: bytes/s, CPU s/byte
    Stats rel_tput, rel_server;  // relative to "none" in the same run
    Stats extra_server;          // CPU s/byte over "none" in the same run
    double predicted_rel_tput = 1, predicted_rel_server = 1, predicted_extra_server = 0;
  };
  std::vector<Row> table;
  std::set<int> run_numbers;
  for (const auto& [n, r] : runs["none"]["large"]) run_numbers.insert(n);
  for (const Posture& posture : Postures()) {
    if (!runs.count(posture.name)) continue;
    std::string observed;
    if (!status_dir.empty()) {
      auto ciphers = TconCiphers(absl::StrCat(status_dir, "/", posture.name, ".json"));
      if (!ciphers) {
        observed = "no smbstatus capture";
      } else {
        observed = absl::StrCat("signing ", ciphers->first, ", encryption ", ciphers->second);
        bool sign_ok =
            *posture.smbstatus_signing == '\0' || ciphers->first == posture.smbstatus_signing;
        bool enc_ok = ciphers->second == posture.smbstatus_encryption ||
                      ciphers->second == absl::StrCat(posture.smbstatus_encryption, " (session)");
        if (!sign_ok || !enc_ok) absl::StrAppend(&observed, " (MISMATCH)");
      }
    }
    for (const char* workload : {"large", "small"}) {
      std::vector<double> tput, server, rel_tput, rel_server, extra_server;
      for (int run : run_numbers) {
        auto d = derive(posture.name, workload, run);
        auto base = derive("none", workload, run);
        if (!d) continue;
        tput.push_back(d->tput);
        server.push_back(d->server);
        if (base && base->tput > 0 && base->server > 0) {
          rel_tput.push_back(d->tput / base->tput);
          rel_server.push_back(d->server / base->server);
          extra_server.push_back(d->server - base->server);
        }
      }
      if (tput.empty()) continue;
      const cost::Workload& w = std::string(workload) == "large" ? large : small;
      cost::Prediction p = cost::Predict(host, posture.level, w);
      cost::Prediction p0 = cost::Predict(host, cost::ProtectionLevel::None(), w);
      Row row;
      row.posture = posture.name;
      row.workload = workload;
      row.observed = observed;
      row.n = tput.size();
      row.predicted_tput = p.throughput_bytes_per_second;
      row.predicted_server = p.server_cpu_seconds_per_byte;
      row.predicted_limit = cost::LimitName(p.limit);
      row.tput = Summarize(tput);
      row.server = Summarize(server);
      row.rel_tput = Summarize(rel_tput);
      row.rel_server = Summarize(rel_server);
      row.extra_server = Summarize(extra_server);
      row.predicted_extra_server = p.server_cpu_seconds_per_byte - p0.server_cpu_seconds_per_byte;
      row.predicted_rel_tput = p.throughput_bytes_per_second / p0.throughput_bytes_per_second;
      row.predicted_rel_server = p.server_cpu_seconds_per_byte / p0.server_cpu_seconds_per_byte;
      table.push_back(row);
    }
  }

  // The posture's figure against the same figure of "none": medians, or the least disturbed
  // runs (best of N against best of N) with --statistic=best.
  const char* statistic = best ? "best" : "median";
  std::map<std::string, const Row*> none_row;
  for (const Row& r : table) {
    if (r.posture == "none") none_row[r.workload] = &r;
  }
  auto tput_of = [&](const Stats& s) { return best ? s.max : s.median; };
  auto server_of = [&](const Stats& s) { return best ? s.min : s.median; };
  auto best_rel_tput = [&](const Row& r) {
    const Row* n = none_row[r.workload];
    return n && tput_of(n->tput) > 0 ? tput_of(r.tput) / tput_of(n->tput) : 0;
  };
  auto best_rel_server = [&](const Row& r) {
    const Row* n = none_row[r.workload];
    return n && server_of(n->server) > 0 ? server_of(r.server) / server_of(n->server) : 0;
  };

  // Ordering: pairs of postures (same workload) whose relative-throughput ranges do not
  // overlap must be ordered the same way by the model.
  Ordering by_rel_tput = CompareOrder(
      table, [](const Row& r) { return r.predicted_rel_tput; },
      [](const Row& r) -> const Stats& { return r.rel_tput; });
  // Through a link: the absolute figures, by throughput and by server CPU per byte.
  Ordering by_tput = CompareOrder(
      table, [](const Row& r) { return r.predicted_tput; },
      [](const Row& r) -> const Stats& { return r.tput; });
  Ordering by_server = CompareOrder(
      table, [](const Row& r) { return r.predicted_server; },
      [](const Row& r) -> const Stats& { return r.server; });

  nlohmann::json rows = nlohmann::json::array();
  int within = 0, compared = 0;
  for (const Row& r : table) {
    double et = ErrorPercent(r.predicted_rel_tput, best_rel_tput(r));
    double es = ErrorPercent(r.predicted_rel_server, best_rel_server(r));
    double abs_et = ErrorPercent(r.predicted_tput, tput_of(r.tput));
    double abs_es = ErrorPercent(r.predicted_server, server_of(r.server));
    bool row_within = link ? std::abs(abs_et) <= 25 && std::abs(abs_es) <= 25
                           : std::abs(et) <= 25 && std::abs(es) <= 25;
    if (link || r.posture != "none") {
      ++compared;
      if (row_within) ++within;
    }
    rows.push_back({{"posture", r.posture},
                    {"workload", r.workload},
                    {"runs", r.n},
                    {"observed", r.observed},
                    {"predictedThroughputVsNone", r.predicted_rel_tput},
                    {"statistic", statistic},
                    {"judgedThroughputVsNone", best_rel_tput(r)},
                    {"judgedServerCpuVsNone", best_rel_server(r)},
                    {"measuredThroughputVsNone", r.rel_tput.median},
                    {"measuredThroughputVsNoneMin", r.rel_tput.min},
                    {"measuredThroughputVsNoneMax", r.rel_tput.max},
                    {"throughputErrorPercent", et},
                    {"predictedServerCpuVsNone", r.predicted_rel_server},
                    {"measuredServerCpuVsNone", r.rel_server.median},
                    {"measuredServerCpuVsNoneMin", r.rel_server.min},
                    {"measuredServerCpuVsNoneMax", r.rel_server.max},
                    {"serverCpuErrorPercent", es},
                    {"predictedMBps", r.predicted_tput / 1e6},
                    {"measuredMBps", r.tput.median / 1e6},
                    {"measuredMBpsMin", r.tput.min / 1e6},
                    {"measuredMBpsMax", r.tput.max / 1e6},
                    {"predictedServerCpuSecondsPerGB", r.predicted_server * 1e9},
                    {"measuredServerCpuSecondsPerGB", r.server.median * 1e9},
                    {"measuredServerCpuSecondsPerGBMin", r.server.min * 1e9},
                    {"measuredServerCpuSecondsPerGBMax", r.server.max * 1e9},
                    {"predictedLimit", r.predicted_limit},
                    {"predictedExtraServerCpuSecondsPerGB", r.predicted_extra_server * 1e9},
                    {"measuredExtraServerCpuSecondsPerGB", r.extra_server.median * 1e9},
                    {"measuredExtraServerCpuSecondsPerGBMin", r.extra_server.min * 1e9},
                    {"measuredExtraServerCpuSecondsPerGBMax", r.extra_server.max * 1e9},
                    {"absoluteThroughputErrorPercent", abs_et},
                    {"absoluteServerCpuErrorPercent", abs_es},
                    {"withinTwentyFivePercent", row_within}});
  }

  if (markdown && link) {
    std::printf(
        "| posture | smbstatus (tcon) | MB/s predicted (limit) | measured %s (min-max) | error "
        "| server CPU s/GB predicted | measured %s (min-max) | error | within 25%% | CPU s/GB over "
        "none: predicted | measured, per-run median (min-max) |\n",
        statistic, statistic);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : table) {
      std::printf(
          "| %s | %s | %.1f (%s) | %.1f (%.1f-%.1f) | %+.0f%% | %.2f | %.2f (%.2f-%.2f) | "
          "%+.0f%% | %s | %.2f | %.2f (%.2f-%.2f) |\n",
          r.posture.c_str(), r.observed.c_str(), r.predicted_tput / 1e6, r.predicted_limit.c_str(),
          tput_of(r.tput) / 1e6, r.tput.min / 1e6, r.tput.max / 1e6,
          ErrorPercent(r.predicted_tput, tput_of(r.tput)), r.predicted_server * 1e9,
          server_of(r.server) * 1e9, r.server.min * 1e9, r.server.max * 1e9,
          ErrorPercent(r.predicted_server, server_of(r.server)),
          std::abs(ErrorPercent(r.predicted_tput, tput_of(r.tput))) <= 25 &&
                  std::abs(ErrorPercent(r.predicted_server, server_of(r.server))) <= 25
              ? "yes"
              : "no",
          r.predicted_extra_server * 1e9, r.extra_server.median * 1e9, r.extra_server.min * 1e9,
          r.extra_server.max * 1e9);
    }
    std::printf("\n");
  } else if (markdown) {
    std::printf(
        "| posture | workload | smbstatus (tcon) | throughput vs none: predicted | measured "
        "(%s) | error | per-run ratio median (min-max) | server CPU/byte vs none: predicted | "
        "measured (%s) | error | per-run ratio median (min-max) | MB/s predicted | MB/s best, "
        "median (min) | server CPU s/GB predicted | best, median (max) |\n",
        statistic, statistic);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : table) {
      std::printf(
          "| %s | %s | %s | %.2f | %.2f | %+.0f%% | %.2f (%.2f-%.2f) | %.2f | %.2f | "
          "%+.0f%% | %.2f (%.2f-%.2f) | %.0f | %.0f, %.0f (%.0f) | %.2f | %.2f, %.2f "
          "(%.2f) |\n",
          r.posture.c_str(), r.workload.c_str(), r.observed.c_str(), r.predicted_rel_tput,
          best_rel_tput(r), ErrorPercent(r.predicted_rel_tput, best_rel_tput(r)), r.rel_tput.median,
          r.rel_tput.min, r.rel_tput.max, r.predicted_rel_server, best_rel_server(r),
          ErrorPercent(r.predicted_rel_server, best_rel_server(r)), r.rel_server.median,
          r.rel_server.min, r.rel_server.max, r.predicted_tput / 1e6, r.tput.max / 1e6,
          r.tput.median / 1e6, r.tput.min / 1e6, r.predicted_server * 1e9, r.server.min * 1e9,
          r.server.median * 1e9, r.server.max * 1e9);
    }
    std::printf("\n");
  }

  nlohmann::json out = {{"benchmark", "cost_model_validate"},
                        {"loopbackRttMs", rtt * 1000},
                        {"logicalCores", host.logical_cores},
                        {"pageFaultSeconds", host.page_fault_seconds},
                        {"smallFileBytes", small.file_bytes},
                        {"hostCrypto", HostCryptoJson(host)},
                        {"rows", rows},
                        {"statistic", statistic},
                        {"comparedPredictions", compared},
                        {"withinTwentyFivePercent", within},
                        {"orderingPairs", by_rel_tput.pairs},
                        {"orderingPairsSeparatedByMoreThanNoise", by_rel_tput.decided},
                        {"orderingConcordant", by_rel_tput.concordant + by_rel_tput.predicted_ties},
                        {"orderingDiscordant", by_rel_tput.discordant}};
  if (link) {
    out.erase("loopbackRttMs");
    out["benchmark"] = "cost_model_validate_link";
    out["linkMbit"] = link_mbit;
    out["rttMs"] = rtt_ms;
    out["client"] = cost::ClientKindName(client);
    out["windowBytes"] = cost::DefaultParameters().WindowBytes(client);
    out["orderingByThroughput"] = OrderingJson(by_tput);
    out["orderingByServerCpu"] = OrderingJson(by_server);
  }

  // What the product would say for this CPU in a server room: the same benchmark on an 8-core
  // server with a 1 Gbit link (LAN RTT) and over a 30 ms WAN, Windows (uncalibrated factors)
  // and Samba.
  nlohmann::json examples = nlohmann::json::array();
  for (v1::Platform platform : {v1::PLATFORM_WINDOWS, v1::PLATFORM_SAMBA}) {
    for (const char* rtt_ms : {"0.25", "30"}) {
      v1::Posture server = host_posture;
      server.mutable_host()->set_hostname("fs01");
      server.mutable_host()->set_platform(platform);
      server.mutable_host()->set_logical_cores(8);
      (*server.mutable_host()->mutable_labels())["link_speed"] = "1Gbit";
      (*server.mutable_host()->mutable_labels())["rtt_ms"] = rtt_ms;
      for (const cost::ProtectionLevel& after :
           {cost::ProtectionLevel::Signing(v1::AES_128_GMAC),
            cost::ProtectionLevel::Signing(v1::AES_128_CMAC),
            cost::ProtectionLevel::Encryption(v1::AES_128_GCM),
            cost::ProtectionLevel::Encryption(v1::AES_128_CCM)}) {
        cost::ChangeCost change =
            cost::EstimateChangeCost(server, cost::ProtectionLevel::None(), after);
        examples.push_back({{"platform", v1::Platform_Name(platform)},
                            {"rttMs", rtt_ms},
                            {"summary", change.summary}});
      }
    }
  }
  out["examples"] = examples;

  if (calibrate) {
    // Fit the CPU parameters from these runs (docs/cost-model.md, "Calibration"): the
    // median CPU per byte over the runs, or the lowest (least disturbed) with --statistic=best.
    auto best_abs = [&](const char* posture, const char* workload, bool client) {
      std::vector<double> v;
      for (int run : run_numbers) {
        if (auto d = derive(posture, workload, run)) v.push_back(client ? d->client : d->server);
      }
      Stats st = Summarize(v);
      return best ? st.min : st.median;
    };
    const double io = static_cast<double>(large.io_bytes);
    const double file = static_cast<double>(small.file_bytes);
    const double ops = small.ops_per_file + std::ceil(file / io);
    double fitted[2][3];  // [server, client][base per byte, per op, per io]
    // What the model's page-fault term already holds is left out of the fitted figures.
    auto faults = [&](const cost::ProtectionLevel& level, int side) {
      return cost::FaultSecondsPerByte(host, level, side == 1);
    };
    for (int side = 0; side < 2; ++side) {
      double per_byte_large =
          best_abs("none", "large", side == 1) - faults(cost::ProtectionLevel::None(), side);
      double per_file = best_abs("none", "small", side == 1) * file;
      double per_op = std::max(0.0, (per_file - per_byte_large * file) / ops);
      fitted[side][0] = std::max(0.0, per_byte_large - per_op / io);
      fitted[side][1] = per_op;
      fitted[side][2] = per_byte_large * io;
    }
    nlohmann::json factors = nlohmann::json::object();
    for (const Posture& posture : Postures()) {
      v1::CryptoAlgorithm alg = posture.level.effective_algorithm();
      if (alg == v1::CRYPTO_ALGORITHM_UNSPECIFIED || !runs.count(posture.name)) continue;
      auto it = host.crypto.find(alg);
      if (it == host.crypto.end()) continue;
      double extra_bytes = posture.level.is_encrypted() ? 52 : 0;
      // The model applies the factor to the per-byte part only.
      double per_call = it->second.seconds_per_call * 2;
      double evp = it->second.seconds_per_byte * (io + 150 + 2 * extra_bytes);
      nlohmann::json f;
      for (int side = 0; side < 2; ++side) {
        double extra =
            (best_abs(posture.name, "large", side == 1) - best_abs("none", "large", side == 1) -
             (faults(posture.level, side) - faults(cost::ProtectionLevel::None(), side))) *
            io;
        f[side == 0 ? "server" : "client"] = (extra - per_call) / evp;
      }
      factors[cost::AlgorithmName(alg)] = f;
    }
    out["calibration"] = {{"serverBaseCpuSecondsPerByte", fitted[0][0]},
                          {"clientBaseCpuSecondsPerByte", fitted[1][0]},
                          {"serverCpuSecondsPerOp", fitted[0][1]},
                          {"clientCpuSecondsPerOp", fitted[1][1]},
                          {"cryptoFactor", factors}};
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
