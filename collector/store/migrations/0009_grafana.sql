-- Grafana: the views its dashboards read (dashboards/*.json) and a read-only role,
-- smbfleet_readonly, that may SELECT these views and nothing else (no table; nothing of
-- api_tokens, enrollment_tokens, approver_keys, certificates). Grafana logs in as a LOGIN role
-- that is a member of it (dashboards/README.md).
--
-- Views run with their owner's rights, so a reader needs no right on the tables behind them.
-- Never put a secret (token digest, key, signature, nonce) into a view that is granted here.

-- SMB events, flattened from every stored posture and kept once: agents send each event once
-- (Windows bookmarks, Samba record ids), and a resent one is dropped by the unique key. Written
-- by a trigger on postures, so every writer of postures fills it; rows of earlier postures are
-- copied below.
CREATE TABLE host_events (
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  at             timestamptz NOT NULL,          -- the event's time (else the posture's)
  event_id       bigint NOT NULL DEFAULT 0,     -- 0 for Samba log lines
  channel        text NOT NULL DEFAULT '',
  provider       text NOT NULL DEFAULT '',
  record_id      numeric(20) NOT NULL DEFAULT 0,
  level          text NOT NULL DEFAULT '',
  kind           text NOT NULL DEFAULT '',      -- Event.kind: what it means for policy
  client_address text NOT NULL DEFAULT '',
  client_name    text NOT NULL DEFAULT '',
  user_name      text NOT NULL DEFAULT '',
  share_name     text NOT NULL DEFAULT '',
  status         text NOT NULL DEFAULT '',
  posture_id     bigint NOT NULL
);
CREATE UNIQUE INDEX host_events_once ON host_events (host_id, channel, event_id, record_id, at);
CREATE INDEX host_events_at ON host_events (at);

CREATE FUNCTION host_events_rows(posture_json jsonb, fallback timestamptz)
  RETURNS TABLE (at timestamptz, event_id bigint, channel text, provider text,
                 record_id numeric, level text, kind text, client_address text,
                 client_name text, user_name text, share_name text, status text)
  LANGUAGE sql STABLE AS $$
  SELECT COALESCE((e->>'time')::timestamptz, fallback),
         COALESCE((e->>'eventId')::bigint, 0), COALESCE(e->>'channel', ''),
         COALESCE(e->>'provider', ''), COALESCE((e->>'recordId')::numeric, 0),
         COALESCE(e->>'level', ''), COALESCE(e->>'kind', ''),
         COALESCE(e->>'clientAddress', ''), COALESCE(e->>'clientName', ''),
         COALESCE(e->>'user', ''), COALESCE(e->>'shareName', ''), COALESCE(e->>'status', '')
  FROM jsonb_array_elements(
         CASE WHEN jsonb_typeof(posture_json->'events') = 'array'
              THEN posture_json->'events' ELSE '[]'::jsonb END) e
$$;

CREATE FUNCTION host_events_from_posture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO host_events (host_id, at, event_id, channel, provider, record_id, level, kind,
                           client_address, client_name, user_name, share_name, status,
                           posture_id)
  SELECT NEW.host_id, r.*, NEW.id
  FROM host_events_rows(NEW.posture_json, COALESCE(NEW.collected_at, NEW.stored_at)) r
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$$;
CREATE TRIGGER postures_host_events AFTER INSERT ON postures
  FOR EACH ROW EXECUTE FUNCTION host_events_from_posture();

INSERT INTO host_events (host_id, at, event_id, channel, provider, record_id, level, kind,
                         client_address, client_name, user_name, share_name, status, posture_id)
SELECT p.host_id, r.*, p.id
FROM postures p
CROSS JOIN LATERAL host_events_rows(p.posture_json, COALESCE(p.collected_at, p.stored_at)) r
ORDER BY p.id
ON CONFLICT DO NOTHING;

-- Live sessions: those of each host's latest posture. A session is
--   unsigned    when its signing is NONE or PARTIAL and it is not fully encrypted (an encrypted
--               message is integrity-protected without a signature);
--   unencrypted when its encryption is NONE or PARTIAL;
--   legacy      when its dialect is below SMB 3.0 (SMB1, 2.0.2, 2.1).
-- Unknown (PROTECTION_UNSPECIFIED, DIALECT_UNSPECIFIED) counts as none of them, and apart.
CREATE VIEW sessions_live AS
  SELECT h.name AS host, h.labels, h.platform, h.last_seen, s.session_id, s.client_address,
         s.client_name, s.user_name, s.dialect, s.signing, s.encryption, s.signing_algorithm,
         s.cipher,
         (s.signing IN ('PROTECTION_NONE', 'PROTECTION_PARTIAL')
          AND s.encryption <> 'PROTECTION_FULL') AS unsigned,
         s.encryption IN ('PROTECTION_NONE', 'PROTECTION_PARTIAL') AS unencrypted,
         s.dialect IN ('DIALECT_SMB1', 'DIALECT_SMB_2_0_2', 'DIALECT_SMB_2_1') AS legacy_dialect,
         (s.signing = 'PROTECTION_UNSPECIFIED' AND s.encryption <> 'PROTECTION_FULL')
           AS signing_unknown,
         s.encryption = 'PROTECTION_UNSPECIFIED' AS encryption_unknown,
         s.dialect = 'DIALECT_UNSPECIFIED' AS dialect_unknown
  FROM host_sessions s JOIN hosts h ON h.id = s.host_id;

CREATE VIEW sessions_risk_by_host AS
  SELECT host, labels, platform, last_seen,
         count(*) AS sessions,
         count(*) FILTER (WHERE unsigned) AS unsigned,
         count(*) FILTER (WHERE unencrypted) AS unencrypted,
         count(*) FILTER (WHERE legacy_dialect) AS legacy_dialect,
         count(*) FILTER (WHERE dialect = 'DIALECT_SMB1') AS smb1,
         count(*) FILTER (WHERE signing_unknown OR encryption_unknown OR dialect_unknown)
           AS unknown
  FROM sessions_live GROUP BY host, labels, platform, last_seen;

CREATE VIEW sessions_risk_fleet AS
  SELECT count(*) AS sessions,
         count(DISTINCT host) AS hosts,
         count(*) FILTER (WHERE unsigned) AS unsigned,
         count(*) FILTER (WHERE unencrypted) AS unencrypted,
         count(*) FILTER (WHERE legacy_dialect) AS legacy_dialect,
         count(*) FILTER (WHERE dialect = 'DIALECT_SMB1') AS smb1,
         count(DISTINCT host) FILTER (WHERE unsigned) AS hosts_with_unsigned,
         count(DISTINCT host) FILTER (WHERE unencrypted) AS hosts_with_unencrypted,
         count(DISTINCT host) FILTER (WHERE legacy_dialect) AS hosts_with_legacy_dialect,
         round(100.0 * count(*) FILTER (WHERE unsigned) / NULLIF(count(*), 0), 2) AS unsigned_pct,
         round(100.0 * count(*) FILTER (WHERE unencrypted) / NULLIF(count(*), 0), 2)
           AS unencrypted_pct,
         round(100.0 * count(*) FILTER (WHERE legacy_dialect) / NULLIF(count(*), 0), 2)
           AS legacy_dialect_pct
  FROM sessions_live;

-- SMB security events: refusals (the server or client refused something) and audits (it would
-- be refused once the setting is enforced). Event ids and kinds: docs/windows.md.
CREATE VIEW smb_security_events AS
  SELECT e.at, h.name AS host, h.labels, h.platform, e.event_id, e.channel, e.provider, e.kind,
         e.level, e.client_address, e.client_name, e.user_name, e.share_name, e.status,
         CASE
           WHEN e.event_id IN (3000, 3021, 3022, 3023, 31022, 31998, 31999) THEN 'audit'
           WHEN e.kind IN ('server_no_signing', 'server_no_encryption', 'server_capability_audit',
                           'client_capability_audit', 'smb1_access', 'guest_logon') THEN 'audit'
           ELSE 'refusal'
         END AS category,
         CASE
           WHEN e.event_id <> 0 THEN e.event_id::text || ' ' || e.kind
           ELSE e.provider || ' ' || e.kind
         END AS event
  FROM host_events e JOIN hosts h ON h.id = e.host_id
  WHERE e.kind IN ('smb1_access', 'smb1_rejected', 'client_no_signing', 'client_no_encryption',
                   'client_capability_audit', 'server_no_signing', 'server_no_encryption',
                   'server_capability_audit', 'guest_logon', 'guest_logon_rejected',
                   'unencrypted_rejected', 'bad_signature_rejected', 'negotiate_rejected',
                   'signing_validation_failed', 'negotiate_validation_failed',
                   'unencrypted_received', 'decrypt_failed', 'anonymous_denied',
                   'weak_session_key', 'smb1_server_response')
     OR e.event_id IN (1001, 1003, 1004, 1005, 3000, 3021, 3022, 3023, 31013, 31017, 31022,
                       31998, 31999, 32000);

-- Per UTC day (Grafana filters on `day`): the whole fleet, and per host.
CREATE VIEW smb_security_events_daily AS
  SELECT date_trunc('day', at, 'UTC') AS day, category, event_id, kind, event,
         count(*) AS events, count(DISTINCT host) AS hosts,
         count(DISTINCT COALESCE(NULLIF(client_name, ''), client_address)) AS clients
  FROM smb_security_events GROUP BY 1, category, event_id, kind, event;

CREATE VIEW smb_security_events_daily_by_host AS
  SELECT date_trunc('day', at, 'UTC') AS day, host, labels, category, event_id, kind, event,
         count(*) AS events,
         count(DISTINCT COALESCE(NULLIF(client_name, ''), client_address)) AS clients
  FROM smb_security_events GROUP BY 1, host, labels, category, event_id, kind, event;

-- Encryption of classified shares (classification is written by evaluation). A share is
-- encrypted when it encrypts or its server encrypts every share; unknown when neither says
-- true and one of them is unknown.
CREATE VIEW share_encryption AS
  SELECT h.name AS host, h.labels, h.platform, s.name AS share, s.classification,
         s.classification_rule, s.encrypt_data,
         (p.posture_json->'server'->>'encryptData')::boolean AS server_encrypt_data,
         CASE
           WHEN s.encrypt_data OR (p.posture_json->'server'->>'encryptData')::boolean THEN true
           WHEN s.encrypt_data IS NULL
                OR (p.posture_json->'server'->>'encryptData') IS NULL THEN NULL
           ELSE false
         END AS encrypted
  FROM host_shares s
  JOIN hosts h ON h.id = s.host_id
  LEFT JOIN host_state hs ON hs.host_id = s.host_id
  LEFT JOIN postures p ON p.id = hs.posture_id
  WHERE s.classification <> '';

CREATE VIEW encryption_coverage_by_classification AS
  SELECT classification,
         count(*) AS shares,
         count(*) FILTER (WHERE encrypted) AS encrypted,
         count(*) FILTER (WHERE NOT encrypted) AS unencrypted,
         count(*) FILTER (WHERE encrypted IS NULL) AS unknown,
         count(DISTINCT host) AS hosts,
         round(100.0 * count(*) FILTER (WHERE encrypted) / NULLIF(count(*), 0), 2) AS encrypted_pct
  FROM share_encryption GROUP BY classification;

-- Change rollouts: each change with its hosts by state, its approvals and its times.
CREATE VIEW change_rollouts AS
  SELECT c.id AS change_id, c.seq, c.state, c.source, c.rule_id, c.reason, c.proposed_by,
         c.proposed_at, c.updated_at, c.not_after, c.approvals_required,
         COALESCE(a.approvals, 0) AS approvals, COALESCE(a.approvers, '') AS approvers,
         a.last_approved_at, c.current_wave, c.wave_count, c.halt_reason, c.rollback_of,
         c.rolled_back_by, c.policy_name, c.policy_version,
         COALESCE(hs.hosts, 0) AS hosts,
         COALESCE(hs.pending, 0) AS pending, COALESCE(hs.dispatched, 0) AS dispatched,
         COALESCE(hs.applied, 0) AS applied, COALESCE(hs.failed, 0) AS failed,
         COALESCE(hs.precondition_failed, 0) AS precondition_failed,
         COALESCE(hs.refused, 0) AS refused, COALESCE(hs.rolled_back, 0) AS rolled_back,
         COALESCE(hs.timed_out, 0) AS timed_out,
         round(100.0 * COALESCE(hs.finished, 0) / NULLIF(hs.hosts, 0), 2) AS finished_pct,
         round(100.0 * COALESCE(hs.applied, 0) / NULLIF(hs.hosts, 0), 2) AS applied_pct,
         hs.first_dispatched_at, hs.last_finished_at
  FROM changes c
  LEFT JOIN LATERAL (
    SELECT count(*) AS approvals,
           string_agg(ap.approver, ', ' ORDER BY ap.position) AS approvers,
           max(ap.at) AS last_approved_at
    FROM change_approvals ap WHERE ap.change_id = c.id) a ON true
  LEFT JOIN LATERAL (
    SELECT count(*) AS hosts,
           count(*) FILTER (WHERE ch.state = 'PENDING') AS pending,
           count(*) FILTER (WHERE ch.state = 'DISPATCHED') AS dispatched,
           count(*) FILTER (WHERE ch.state = 'APPLIED') AS applied,
           count(*) FILTER (WHERE ch.state = 'FAILED') AS failed,
           count(*) FILTER (WHERE ch.state = 'PRECONDITION_FAILED') AS precondition_failed,
           count(*) FILTER (WHERE ch.state = 'REFUSED') AS refused,
           count(*) FILTER (WHERE ch.state = 'ROLLED_BACK') AS rolled_back,
           count(*) FILTER (WHERE ch.state = 'TIMED_OUT') AS timed_out,
           count(*) FILTER (WHERE ch.state NOT IN ('PENDING', 'DISPATCHED')) AS finished,
           min(ch.dispatched_at) AS first_dispatched_at,
           max(ch.finished_at) AS last_finished_at
    FROM change_hosts ch WHERE ch.change_id = c.id) hs ON true;

CREATE VIEW change_rollout_hosts AS
  SELECT ch.change_id, c.state AS change_state, ch.host, ch.state, ch.wave, ch.dispatched_at,
         ch.finished_at, ch.message
  FROM change_hosts ch JOIN changes c ON c.id = ch.change_id;

-- Agent freshness: how long since each host last reported. Stale = not seen within 2 hours,
-- twice the agent's default report interval (1 hour).
CREATE VIEW agent_freshness AS
  SELECT h.name AS host, h.labels, h.platform, h.os_name, h.os_version, h.agent_version,
         h.first_seen, h.last_seen,
         floor(EXTRACT(EPOCH FROM now() - h.last_seen))::bigint AS age_seconds,
         CASE
           WHEN now() - h.last_seen < interval '1 hour' THEN '< 1h'
           WHEN now() - h.last_seen < interval '2 hours' THEN '1h-2h'
           WHEN now() - h.last_seen < interval '1 day' THEN '2h-1d'
           WHEN now() - h.last_seen < interval '7 days' THEN '1d-7d'
           ELSE '>= 7d'
         END AS age_bucket,
         now() - h.last_seen >= interval '2 hours' AS stale
  FROM hosts h;

CREATE VIEW agent_freshness_buckets AS
  SELECT b.bucket_order, b.age_bucket, count(f.host) AS hosts, b.stale
  FROM (VALUES (1, '< 1h', false), (2, '1h-2h', false), (3, '2h-1d', true),
               (4, '1d-7d', true), (5, '>= 7d', true)) AS b (bucket_order, age_bucket, stale)
  LEFT JOIN agent_freshness f ON f.age_bucket = b.age_bucket
  GROUP BY b.bucket_order, b.age_bucket, b.stale;

-- The read-only role. SELECT on exactly these views; called again (by an owner of the views or
-- a superuser) after an administrator created the role: dashboards/README.md. A later
-- migration that adds a view for Grafana replaces this function with a longer list.
CREATE FUNCTION smbfleet_grant_readonly() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  v text;
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'smbfleet_readonly') THEN
    RETURN false;
  END IF;
  -- PUBLIC has USAGE on schema public by default; another schema needs a grant (by its owner).
  IF NOT has_schema_privilege('smbfleet_readonly', current_schema(), 'USAGE') THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO smbfleet_readonly', current_schema());
  END IF;
  FOREACH v IN ARRAY ARRAY[
      'fleet_sessions_by_dialect', 'waivers_active', 'compliance_current',
      'compliance_failing_since', 'compliance_now_by_rule', 'compliance_now_by_classification',
      'compliance_now_by_label', 'compliance_daily_status', 'compliance_daily_by_rule',
      'compliance_daily_by_classification', 'compliance_daily_by_label', 'sessions_live',
      'sessions_risk_by_host', 'sessions_risk_fleet', 'smb_security_events',
      'smb_security_events_daily', 'smb_security_events_daily_by_host', 'share_encryption',
      'encryption_coverage_by_classification', 'change_rollouts', 'change_rollout_hosts',
      'agent_freshness', 'agent_freshness_buckets'] LOOP
    EXECUTE format('GRANT SELECT ON %I TO smbfleet_readonly', v);
  END LOOP;
  RETURN true;
END
$$;
REVOKE ALL ON FUNCTION smbfleet_grant_readonly() FROM PUBLIC;

-- Create the role when the migrating user may (CREATEROLE or superuser); otherwise an
-- administrator creates it (dashboards/README.md) and the migration goes on without it.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'smbfleet_readonly')
     AND (SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    BEGIN
      CREATE ROLE smbfleet_readonly NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL;  -- another database's migration created it at the same moment
    END;
  END IF;
  IF NOT smbfleet_grant_readonly() THEN
    RAISE NOTICE 'role smbfleet_readonly does not exist and % may not create it: Grafana '
                 'has no read-only role until an administrator creates it '
                 '(dashboards/README.md)', current_user;
  END IF;
END
$$;
