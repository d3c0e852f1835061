// The ChangeStore contract (change_store_conformance.h) against MemoryChangeStore, the store of
// the workflow's unit tests and of a collector without a database.
#include <memory>
#include <utility>

#include "collector/store/memory/memory_approver_key_store.h"
#include "collector/store/memory/memory_change_store.h"
#include "collector/store/memory/memory_enrollment_store.h"
#include "collector/store/memory/memory_store.h"
#include "tests/integration/approver_key_store_conformance.h"
#include "tests/integration/change_store_conformance.h"
#include "tests/integration/enrollment_store_conformance.h"
#include "tests/integration/fleet_store_conformance.h"
#include "tests/integration/identity_store_conformance.h"

namespace smbfleet::collector {
namespace {

using store_testing::ApproverKeyStoreConformanceTest;
using store_testing::ChangeStoreConformanceTest;
using store_testing::ChangeStoreFactory;
using store_testing::ChangeStoreUnderTest;
using store_testing::EnrollmentStoreConformanceTest;
using store_testing::FleetStoreConformanceTest;
using store_testing::IdentityStoreConformanceTest;

// A MemoryComplianceStore that owns the host store it shares: the host store is a base built
// before it and destroyed after it.
struct HostStoreHolder {
  std::unique_ptr<MemoryHostStore> owned_hosts;
};

class OwningComplianceStore : private HostStoreHolder, public MemoryComplianceStore {
 public:
  explicit OwningComplianceStore(std::unique_ptr<MemoryHostStore> hosts)
      : HostStoreHolder{std::move(hosts)}, MemoryComplianceStore(owned_hosts.get()) {}
};

ChangeStoreUnderTest MakeMemoryStore() {
  ChangeStoreUnderTest out;
  auto compliance = std::make_unique<OwningComplianceStore>(std::make_unique<MemoryHostStore>());
  out.changes = std::make_unique<MemoryChangeStore>(compliance.get());
  out.hosts = compliance->host_store();
  out.compliance = std::move(compliance);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Memory, ChangeStoreConformanceTest,
                         ::testing::Values(ChangeStoreFactory{"memory", MakeMemoryStore}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Memory, ApproverKeyStoreConformanceTest,
                         ::testing::Values(store_testing::ApproverKeyStoreFactory{
                             "memory",
                             [] {
                               store_testing::ApproverKeyStoreUnderTest out;
                               out.keys = std::make_unique<MemoryApproverKeyStore>();
                               return out;
                             }}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Memory, IdentityStoreConformanceTest,
                         ::testing::Values(store_testing::IdentityStoreFactory{
                             "memory",
                             [] {
                               store_testing::IdentityStoreUnderTest out;
                               out.store = NewMemoryIdentityStore();
                               return out;
                             }}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Memory, EnrollmentStoreConformanceTest,
                         ::testing::Values(store_testing::EnrollmentStoreFactory{
                             "memory",
                             [] {
                               store_testing::EnrollmentStoreUnderTest out;
                               out.store = std::make_unique<MemoryEnrollmentStore>();
                               return out;
                             }}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Memory, FleetStoreConformanceTest,
                         ::testing::Values(store_testing::FleetStoreFactory{
                             "memory",
                             [] {
                               store_testing::FleetStoreUnderTest out;
                               out.enrollment = std::make_unique<MemoryEnrollmentStore>();
                               auto hosts = std::make_unique<MemoryHostStore>();
                               hosts->SetTrustedLabels(out.enrollment.get());
                               out.compliance =
                                   std::make_unique<MemoryComplianceStore>(hosts.get());
                               out.hosts = std::move(hosts);
                               return out;
                             }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace smbfleet::collector
