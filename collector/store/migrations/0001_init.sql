-- Hosts, reports and the latest state of each host.
-- A host's name is the common name of its agent certificate: identity never comes from a report.

CREATE TABLE hosts (
  id             bigserial PRIMARY KEY,
  name           text NOT NULL UNIQUE,
  platform       text NOT NULL DEFAULT 'PLATFORM_UNSPECIFIED',
  os_name        text NOT NULL DEFAULT '',
  os_version     text NOT NULL DEFAULT '',
  agent_version  text NOT NULL DEFAULT '',
  labels         jsonb NOT NULL DEFAULT '{}'::jsonb,
  first_seen     timestamptz NOT NULL,
  last_seen      timestamptz NOT NULL,
  last_changed   timestamptz,
  last_report_id uuid,
  posture_hash   bytea
);

-- Every report received, changed or not; report_id makes a resent report a no-op.
CREATE TABLE reports (
  report_id    uuid PRIMARY KEY,
  host_id      bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  received_at  timestamptz NOT NULL,
  collected_at timestamptz,
  reason       text NOT NULL DEFAULT '',
  posture_hash bytea NOT NULL,
  changed      boolean NOT NULL,
  size_bytes   integer NOT NULL
);
CREATE INDEX reports_host_received ON reports (host_id, received_at DESC);

-- Each distinct posture of a host, in order: the history.
CREATE TABLE postures (
  id           bigserial PRIMARY KEY,
  host_id      bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  report_id    uuid NOT NULL,
  stored_at    timestamptz NOT NULL,
  collected_at timestamptz,
  posture_hash bytea NOT NULL,
  posture      bytea NOT NULL,          -- smbfleet.v1.Posture, binary
  posture_json jsonb NOT NULL           -- the same, protobuf JSON mapping, for SQL and Grafana
);
CREATE INDEX postures_host_stored ON postures (host_id, stored_at DESC);

-- Latest state, one row per host.
CREATE TABLE host_state (
  host_id    bigint PRIMARY KEY REFERENCES hosts(id) ON DELETE CASCADE,
  posture_id bigint NOT NULL REFERENCES postures(id),
  updated_at timestamptz NOT NULL
);

-- Latest sessions and shares, flattened for views and dashboards.
CREATE TABLE host_sessions (
  host_id           bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  session_id        text NOT NULL,
  client_address    text NOT NULL,
  client_name       text NOT NULL,
  user_name         text NOT NULL,
  dialect           text NOT NULL,
  signing           text NOT NULL,
  encryption        text NOT NULL,
  signing_algorithm text NOT NULL,
  cipher            text NOT NULL,
  shares            jsonb NOT NULL          -- share names of its tree connects
);
CREATE INDEX host_sessions_host ON host_sessions (host_id);

CREATE TABLE host_shares (
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  name           text NOT NULL,
  path           text NOT NULL,
  encrypt_data   boolean,
  compress_data  boolean,
  classification text NOT NULL DEFAULT '',
  PRIMARY KEY (host_id, name)
);

-- Crypto benchmark results per host over time.
CREATE TABLE host_benchmarks (
  host_id          bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  measured_at      timestamptz NOT NULL,
  algorithm        text NOT NULL,
  buffer_bytes     bigint NOT NULL,
  threads          integer NOT NULL,
  bytes_per_second double precision NOT NULL,
  PRIMARY KEY (host_id, measured_at, algorithm, buffer_bytes, threads)
);

-- Views for people and dashboards.
CREATE VIEW fleet_sessions_by_dialect AS
  SELECT dialect, count(*) AS sessions, count(DISTINCT host_id) AS hosts
  FROM host_sessions GROUP BY dialect;
