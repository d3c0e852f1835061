#include "collector/server/startup.h"

#include "collector/ingest/digest.h"
#include "collector/store/postgres/order_signal.h"
#include "collector/store/postgres/pg_store.h"
#include "common/files.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/version.h"

namespace smbfleet::collector {
namespace {

constexpr size_t kMaxPolicyBytes = 4 << 20;

// Null when no policy is configured: then nothing is evaluated.
absl::StatusOr<std::unique_ptr<policy::Policy>> LoadPolicy(const std::string& file,
                                                           ComplianceStore& compliance) {
  if (file.empty()) return std::unique_ptr<policy::Policy>();
  ASSIGN_OR_RETURN(std::string text, ReadFile(file, kMaxPolicyBytes));
  ASSIGN_OR_RETURN(policy::Policy parsed, policy::ParsePolicy(file, text));
  auto policy = std::make_unique<policy::Policy>(std::move(parsed));
  policy->source_digest = Sha256Hex(text);
  RETURN_IF_ERROR(compliance.ActivatePolicy(policy->name, policy->version, text));
  Logger("collector")
      ->info("evaluating policy {} version {} ({} rules)", policy->name, policy->version,
             policy->rules.size());
  return policy;
}

// The order signal between collector processes on one database: NOTIFY/LISTEN, so that an
// approval made through one process reaches the agents whose streams another holds.
OrderSignalFactory PgOrderSignalFactory(const std::string& dsn) {
  return [dsn](OrderSignal::Handler h) -> absl::StatusOr<std::unique_ptr<OrderSignal>> {
    auto signal = std::make_unique<PgOrderSignal>(dsn, std::move(h));
    // Only a hint (the orders are in the store): a slow listener delays, never loses, orders.
    if (!signal->WaitUntilListening(absl::Seconds(5))) {
      Logger("collector")
          ->warn(
              "order signal: not listening yet; other processes' approvals reach this "
              "process's agents when it is");
    }
    return std::unique_ptr<OrderSignal>(std::move(signal));
  };
}

}  // namespace

absl::StatusOr<std::unique_ptr<Collector>> StartFromConfig(const CollectorConfig& config) {
  ASSIGN_OR_RETURN(TlsMaterial tls, LoadTls(config.tls));
  Logger("collector")
      ->info("smbfleet-collector {} starting; database {}", kVersion,
             RedactDsn(config.database_dsn));
  // Every connection carries a connect timeout, TCP keepalives and a statement_timeout; the
  // migrations' have no statement_timeout (one may rewrite a large table).
  SessionLimits limits;
  limits.connect_timeout = absl::FromChrono(config.database.connect_timeout);
  limits.statement_timeout = absl::FromChrono(config.database.statement_timeout);
  limits.keepalives_idle = absl::FromChrono(config.database.keepalives_idle);
  ASSIGN_OR_RETURN(std::string dsn, WithSessionLimits(config.database_dsn, limits));
  SessionLimits migration_limits = limits;
  migration_limits.statement_timeout = absl::ZeroDuration();  // 0: none
  ASSIGN_OR_RETURN(std::string migration_dsn,
                   WithSessionLimits(config.database_dsn, migration_limits));
  RETURN_IF_ERROR(WaitForDatabase(dsn, absl::FromChrono(config.database.startup_timeout)));
  RETURN_IF_ERROR(ApplyMigrations(migration_dsn, BuiltinMigrations()));
  PoolOptions pool;
  pool.acquire_timeout = absl::FromChrono(config.database.acquire_timeout);
  // Past statement_timeout the server cancels the statement itself; a lease held 5 s longer
  // means the server stopped answering.
  pool.lease_limit = limits.statement_timeout + absl::Seconds(5);
  std::function<size_t()> close_pool;
  ASSIGN_OR_RETURN(Stores stores,
                   NewPgStore(dsn, static_cast<int>(config.database_pool_size), pool, &close_pool));
  ASSIGN_OR_RETURN(std::unique_ptr<policy::Policy> policy,
                   LoadPolicy(config.policy_file, *stores.compliance));
  CollectorConfig effective = config;
  effective.database_dsn = dsn;
  ASSIGN_OR_RETURN(std::unique_ptr<Collector> collector,
                   Collector::Start(effective, tls, std::move(stores), std::move(policy),
                                    PgOrderSignalFactory(dsn)));
  // Shutdown does not wait on a stuck database past its deadline.
  collector->set_on_shutdown_deadline(std::move(close_pool));
  return collector;
}

}  // namespace smbfleet::collector
