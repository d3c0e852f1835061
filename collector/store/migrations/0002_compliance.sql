-- Compliance: policy versions, the latest result per host/rule/share (keyed by policy version),
-- the status transitions behind "failing since" and compliance over time, and waivers.
--
-- Status values are the short names of smbfleet.v1.ComplianceStatus (policy::StatusName):
-- COMPLIANT, NON_COMPLIANT, UNKNOWN, NOT_APPLICABLE, WAIVED, ERROR. In transitions NULL stands
-- for COMPLIANCE_STATUS_UNSPECIFIED: from_status NULL = first result for the key, to_status
-- NULL = no longer evaluated (rule removed, share gone). share_name '' = a host rule.
-- Compliance % = (COMPLIANT + WAIVED) / (everything except NOT_APPLICABLE).

CREATE TABLE policy_versions (
  policy_name text NOT NULL,
  version     text NOT NULL,
  loaded_at   timestamptz NOT NULL DEFAULT now(),
  active      boolean NOT NULL DEFAULT false,
  source      text NOT NULL DEFAULT '',  -- the policy file as loaded
  PRIMARY KEY (policy_name, version)
);
-- One active version per policy: results of any other version are stale.
CREATE UNIQUE INDEX policy_versions_one_active ON policy_versions (policy_name) WHERE active;

CREATE TABLE compliance_results (
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  rule_id        text NOT NULL,
  share_name     text NOT NULL DEFAULT '',
  classification text NOT NULL DEFAULT '',
  status         text NOT NULL CHECK (status IN
                   ('COMPLIANT', 'NON_COMPLIANT', 'UNKNOWN', 'NOT_APPLICABLE', 'WAIVED', 'ERROR')),
  severity       text NOT NULL DEFAULT '',
  message        text NOT NULL DEFAULT '',
  evidence       jsonb NOT NULL DEFAULT '[]'::jsonb,  -- smbfleet.v1.Evidence[], JSON mapping
  waiver_id      text,
  cis_ws2022     text NOT NULL DEFAULT '',
  cis_ws2025     text NOT NULL DEFAULT '',
  evaluated_at   timestamptz NOT NULL,
  PRIMARY KEY (host_id, policy_name, rule_id, share_name),
  FOREIGN KEY (policy_name, policy_version) REFERENCES policy_versions (policy_name, version)
);
CREATE INDEX compliance_results_rule ON compliance_results (policy_name, rule_id, status);

CREATE TABLE compliance_transitions (
  id             bigserial PRIMARY KEY,
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  rule_id        text NOT NULL,
  share_name     text NOT NULL DEFAULT '',
  classification text NOT NULL DEFAULT '',
  from_status    text CHECK (from_status IN
                   ('COMPLIANT', 'NON_COMPLIANT', 'UNKNOWN', 'NOT_APPLICABLE', 'WAIVED', 'ERROR')),
  to_status      text CHECK (to_status IN
                   ('COMPLIANT', 'NON_COMPLIANT', 'UNKNOWN', 'NOT_APPLICABLE', 'WAIVED', 'ERROR')),
  at             timestamptz NOT NULL,
  labels         jsonb NOT NULL DEFAULT '{}'::jsonb,  -- the host's labels when it happened
  CHECK (from_status IS DISTINCT FROM to_status)
);
CREATE INDEX compliance_transitions_key
  ON compliance_transitions (host_id, policy_name, rule_id, share_name, at DESC);
CREATE INDEX compliance_transitions_at ON compliance_transitions (at);

CREATE TABLE waivers (
  id            text PRIMARY KEY,
  rule_id       text NOT NULL CHECK (rule_id <> ''),  -- a rule id or '*'
  host_name     text,
  label_key     text,
  label_value   text,
  share_name    text,
  justification text NOT NULL CHECK (btrim(justification) <> ''),
  approved_by   text NOT NULL CHECK (btrim(approved_by) <> ''),
  created_by    text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz,
  CHECK (expires_at > created_at),
  CHECK ((label_key IS NULL) = (label_value IS NULL)),
  CHECK (NOT (host_name IS NOT NULL AND label_key IS NOT NULL)),
  CHECK (NOT (label_key IS NOT NULL AND share_name IS NOT NULL)),
  CHECK (host_name IS NOT NULL OR label_key IS NOT NULL OR share_name IS NOT NULL),
  -- four eyes: whoever asked for a waiver does not approve it
  CHECK (created_by = '' OR created_by <> approved_by)
);

-- Waivers in force now; an expired one drops out by itself.
CREATE VIEW waivers_active AS
  SELECT * FROM waivers WHERE revoked_at IS NULL AND expires_at > now() AND created_at <= now();

-- Current results of the active policy versions only.
CREATE VIEW compliance_current AS
  SELECT h.name AS host, h.labels, h.platform, r.*
  FROM compliance_results r
  JOIN hosts h ON h.id = r.host_id
  JOIN policy_versions v
    ON v.policy_name = r.policy_name AND v.version = r.policy_version AND v.active;

-- Failing results and since when they fail (the last transition into NON_COMPLIANT).
CREATE VIEW compliance_failing_since AS
  SELECT c.host, c.host_id, c.labels, c.policy_name, c.policy_version, c.rule_id, c.share_name,
         c.classification, c.severity, c.message, c.evidence,
         COALESCE((SELECT max(t.at) FROM compliance_transitions t
                   WHERE t.host_id = c.host_id AND t.policy_name = c.policy_name
                     AND t.rule_id = c.rule_id AND t.share_name = c.share_name
                     AND t.to_status = 'NON_COMPLIANT'),
                  c.evaluated_at) AS failing_since
  FROM compliance_current c
  WHERE c.status = 'NON_COMPLIANT';

-- Now, per rule / classification / label.
CREATE VIEW compliance_now_by_rule AS
  SELECT policy_name, rule_id,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         count(*) FILTER (WHERE status = 'UNKNOWN') AS unknown,
         count(*) FILTER (WHERE status = 'ERROR') AS errors,
         count(*) FILTER (WHERE status = 'NOT_APPLICABLE') AS not_applicable,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_current GROUP BY policy_name, rule_id;

CREATE VIEW compliance_now_by_classification AS
  SELECT policy_name, classification,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_current WHERE share_name <> '' GROUP BY policy_name, classification;

CREATE VIEW compliance_now_by_label AS
  SELECT c.policy_name, l.key AS label_key, l.value AS label_value,
         count(*) FILTER (WHERE c.status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE c.status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE c.status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE c.status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE c.status <> 'NOT_APPLICABLE'), 0), 2)
           AS compliant_pct
  FROM compliance_current c CROSS JOIN LATERAL jsonb_each_text(c.labels) l
  GROUP BY c.policy_name, l.key, l.value;

-- Over time: the status of every (host, rule, share) at the end of each UTC day, rebuilt from
-- the transitions (a key counts from its first transition until one to NULL). Grafana filters
-- on `day`.
CREATE VIEW compliance_daily_status AS
  WITH keys AS (
    SELECT host_id, policy_name, rule_id, share_name, min(at) AS first_at
    FROM compliance_transitions GROUP BY host_id, policy_name, rule_id, share_name
  ),
  days AS (
    SELECT generate_series(date_trunc('day', min(first_at), 'UTC'),
                           date_trunc('day', now(), 'UTC'), interval '1 day') AS day
    FROM keys
  )
  SELECT d.day, k.host_id, k.policy_name, k.rule_id, k.share_name, s.classification,
         s.labels, s.policy_version, s.to_status AS status
  FROM days d
  JOIN keys k ON k.first_at < d.day + interval '1 day'
  CROSS JOIN LATERAL (
    SELECT t.to_status, t.classification, t.labels, t.policy_version
    FROM compliance_transitions t
    WHERE t.host_id = k.host_id AND t.policy_name = k.policy_name AND t.rule_id = k.rule_id
      AND t.share_name = k.share_name AND t.at < d.day + interval '1 day'
    ORDER BY t.at DESC, t.id DESC LIMIT 1) s
  WHERE s.to_status IS NOT NULL;

CREATE VIEW compliance_daily_by_rule AS
  SELECT day, policy_name, rule_id,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_daily_status GROUP BY day, policy_name, rule_id;

CREATE VIEW compliance_daily_by_classification AS
  SELECT day, policy_name, classification,
         count(*) FILTER (WHERE status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_daily_status WHERE share_name <> ''
  GROUP BY day, policy_name, classification;

CREATE VIEW compliance_daily_by_label AS
  SELECT s.day, s.policy_name, l.key AS label_key, l.value AS label_value,
         count(*) FILTER (WHERE s.status = 'COMPLIANT') AS compliant,
         count(*) FILTER (WHERE s.status = 'NON_COMPLIANT') AS non_compliant,
         count(*) FILTER (WHERE s.status = 'WAIVED') AS waived,
         round(100.0 * count(*) FILTER (WHERE s.status IN ('COMPLIANT', 'WAIVED'))
               / NULLIF(count(*) FILTER (WHERE s.status <> 'NOT_APPLICABLE'), 0), 2)
           AS compliant_pct
  FROM compliance_daily_status s CROSS JOIN LATERAL jsonb_each_text(s.labels) l
  GROUP BY s.day, s.policy_name, l.key, l.value;
