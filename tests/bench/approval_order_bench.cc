// What one change order weighs on the wire as the change grows: a v1 approval payload lists
// every host, so each host's order carries the whole change; a v2 payload carries the Merkle
// tree head of the hosts' orders, and each order its own host's order and inclusion proof
// (docs/agent-changes.md). Also what the collector spends building a change's tree and what an
// agent spends checking its proof. Prints one JSON object; a figure, not a test.
//
//   approval_order_bench [--hosts=1000,10000,100000]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/changes/approval_payload.h"
#include "collector/changes/change_service.h"
#include "common/approval_signing.h"
#include "nlohmann/json.hpp"

namespace {

namespace v1 = smbfleet::v1;
using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A change to `hosts` hosts of the shape the scale benchmark pushes: one setting each, with
// its expected and new values, two approvals.
v1::Change ChangeOf(int hosts) {
  v1::Change c;
  c.set_id("7f2c1d9e-0000-4000-8000-000000000001");
  c.set_version(1);
  c.set_approval_nonce("00112233445566778899aabbccddeeff");
  c.mutable_not_after()->set_seconds(1'900'000'000);
  c.set_proposed_by("proposer");
  c.set_approvals_required(2);
  c.set_content_hash(std::string(64, 'a'));
  for (int i = 0; i < hosts; ++i) {
    v1::ChangeHost* h = c.add_hosts();
    h->set_host(absl::StrCat("sim-", 100000 + i, ".fleet.example"));
    h->set_nonce(std::string(32, 'f'));
    v1::PlanStep* s = h->add_steps();
    s->set_setting("server.auditClientDoesNotSupportSigning");
    s->set_expected_current("false");
    s->set_value("true");
    s->set_rollback_value("false");
  }
  for (const char* who : {"approver-a", "approver-b"}) {
    v1::ChangeApproval* a = c.add_approvals();
    a->set_approver(who);
    a->set_key_id(std::string(16, '0'));
    a->set_signature(std::string(64, 's'));
  }
  return c;
}

nlohmann::json Measure(int hosts) {
  v1::Change change = ChangeOf(hosts);

  // v1: every order carries the payload listing every host.
  v1::ApprovalPayload v1_payload;
  v1_payload.set_change_id(change.id());
  v1_payload.set_version(change.version());
  v1_payload.set_nonce(change.approval_nonce());
  *v1_payload.mutable_not_after() = change.not_after();
  v1_payload.set_proposed_by(change.proposed_by());
  v1_payload.set_approvals_required(change.approvals_required());
  for (v1::HostOrder& h : smbfleet::collector::changes::ApprovalHostsOf(change)) {
    *v1_payload.add_hosts() = std::move(h);
  }
  const std::string v1_bytes = smbfleet::CanonicalApprovalPayload(v1_payload).value();
  v1::Change as_v1 = change;
  as_v1.set_approval_payload(v1_bytes);
  const size_t v1_order =
      smbfleet::collector::changes::OrderFor(as_v1, change.hosts(0).host(), nullptr).ByteSizeLong();

  // v2: the tree, built once per change, then each host's order.
  const Clock::time_point build = Clock::now();
  smbfleet::ApprovalHostTree tree = smbfleet::collector::changes::ApprovalTreeOf(change).value();
  const double build_ms = MillisSince(build);
  const std::string v2_bytes = smbfleet::collector::changes::ApprovalPayloadBytes(change).value();
  // As the dispatcher gets it from the store: the change with only the order's host.
  v1::Change as_v2 = change;
  as_v2.set_approval_payload(v2_bytes);
  as_v2.clear_hosts();
  size_t v2_max = 0;
  int proof_max = 0;
  double v2_total = 0;
  const Clock::time_point orders = Clock::now();
  for (const auto& h : change.hosts()) {
    *as_v2.add_hosts() = h;
    const v1::ChangeOrder order = smbfleet::collector::changes::OrderFor(as_v2, h.host(), &tree);
    as_v2.clear_hosts();
    const size_t n = order.ByteSizeLong();
    v2_max = std::max(v2_max, n);
    proof_max = std::max(proof_max, order.host_proof_size());
    v2_total += static_cast<double>(n);
  }
  const double orders_ms = MillisSince(orders);

  // What an agent adds to its check: parse the payload, hash its leaf up the proof.
  *as_v2.add_hosts() = change.hosts(hosts - 1);
  const v1::ChangeOrder last =
      smbfleet::collector::changes::OrderFor(as_v2, change.hosts(hosts - 1).host(), &tree);
  constexpr int kChecks = 1000;
  const Clock::time_point check = Clock::now();
  for (int i = 0; i < kChecks; ++i) {
    v1::ApprovalPayload p = smbfleet::ParseApprovalPayload(last.approval_payload()).value();
    const std::vector<std::string> proof(last.host_proof().begin(), last.host_proof().end());
    if (!smbfleet::VerifyHostOrderInclusion(p, last.host_order(), last.host_index(), proof).ok()) {
      std::fprintf(stderr, "approval_order_bench: a proof did not verify\n");
      std::exit(1);
    }
  }
  const double check_us = MillisSince(check) * 1000.0 / kChecks;

  return {{"hosts", hosts},
          {"v1",
           {{"payload_bytes", v1_bytes.size()},
            {"order_bytes", v1_order},
            {"wave_mb", static_cast<double>(v1_order) * hosts / 1e6}}},
          {"v2",
           {{"payload_bytes", v2_bytes.size()},
            {"order_bytes_max", v2_max},
            {"proof_hashes_max", proof_max},
            {"wave_mb", v2_total / 1e6},
            {"tree_build_ms", build_ms},
            {"orders_ms", orders_ms},
            {"agent_check_us", check_us}}}};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1000, 10000, 100000};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!absl::StartsWith(arg, "--hosts=")) {
      std::fprintf(stderr, "usage: approval_order_bench [--hosts=N,N,...]\n");
      return 2;
    }
    sizes.clear();
    for (absl::string_view n : absl::StrSplit(arg.substr(8), ',')) {
      int v = 0;
      if (!absl::SimpleAtoi(n, &v) || v < 1 || v > 1'000'000) {
        std::fprintf(stderr, "approval_order_bench: --hosts: '%s' is not 1..1000000\n",
                     std::string(n).c_str());
        return 2;
      }
      sizes.push_back(v);
    }
  }
  nlohmann::json steps = nlohmann::json::array();
  for (int n : sizes) steps.push_back(Measure(n));
  std::printf("%s\n", nlohmann::json({{"orders", steps}}).dump(1).c_str());
  return 0;
}
