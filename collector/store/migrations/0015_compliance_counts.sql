-- Compliance counts kept as results change, so that the overview and GetCompliance read a few
-- hundred rows instead of every current result (docs/scaling.md, "Policy change and queries at
-- 100,000 hosts"). Triggers on compliance_results and compliance_transitions keep them in the
-- transaction that changes the rows, whichever statement does it (SaveEvaluation, a host's
-- deletion cascading, anything written later).
--
-- The fleet-wide counts (compliance_counts, compliance_trend_counts) are rows per key and per
-- writing backend (`slot` = pg_backend_pid()), so two collectors saving at once never wait on,
-- or deadlock over, a count row; a reader sums the slots. A statement only inserts its changes
-- (`tx` = its transaction), so a transaction that saves many hosts does not update one row
-- again and again; the backend's next transaction adds them into its rows of `tx` 0
-- (compliance_counts_settle). compliance_counts_fold() adds the rows of backends that are gone
-- into slot 0 (run at each policy activation, i.e. each collector start). The per-host tables
-- are written only by writers of that host, which hold its row lock in hosts.

-- Current results by policy version, rule, share classification and status.
CREATE TABLE compliance_counts (
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  rule_id        text NOT NULL,
  on_share       boolean NOT NULL,  -- share_name <> ''
  classification text NOT NULL,
  status         text NOT NULL,
  slot           integer NOT NULL,
  tx             bigint NOT NULL,  -- 0: settled; else the transaction whose changes these are
  n              bigint NOT NULL
);
CREATE UNIQUE INDEX compliance_counts_settled
  ON compliance_counts (policy_name, policy_version, rule_id, on_share, classification, status, slot)
  WHERE tx = 0;
CREATE INDEX compliance_counts_unsettled ON compliance_counts (slot) WHERE tx <> 0;

-- Current results of each host by policy version and status (the per-label counts).
CREATE TABLE compliance_host_counts (
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  status         text NOT NULL,
  n              bigint NOT NULL,
  PRIMARY KEY (host_id, policy_name, policy_version, status)
);

-- Each host's failing results by policy version: since when the longest one fails (as
-- compliance_failing_since: its last transition into NON_COMPLIANT, else its evaluation) and how
-- many rules fail. Recomputed from the host's own rows whenever its results change.
CREATE TABLE compliance_host_failing (
  host_id        bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  since          timestamptz NOT NULL,
  rules          bigint NOT NULL,
  PRIMARY KEY (host_id, policy_name, policy_version)
);
CREATE INDEX compliance_host_failing_since
  ON compliance_host_failing (policy_name, policy_version, since);

-- The trend: what the transitions of each UTC day changed, per status (+1 into to_status, -1
-- out of from_status). A day's counts are the sum of every day up to it: each key's last status
-- by then, as long as each transition's from_status is its key's status before it (what
-- RecordEvaluation writes: transitions against the stored results, in time order).
CREATE TABLE compliance_trend_counts (
  policy_name text NOT NULL,
  day         date NOT NULL,
  status      text NOT NULL,
  slot        integer NOT NULL,
  tx          bigint NOT NULL,
  n           bigint NOT NULL
);
CREATE UNIQUE INDEX compliance_trend_counts_settled
  ON compliance_trend_counts (policy_name, day, status, slot) WHERE tx = 0;
CREATE INDEX compliance_trend_counts_unsettled ON compliance_trend_counts (slot) WHERE tx <> 0;

-- Adds what this backend's earlier transactions inserted into its settled rows; once per
-- transaction (before its first change), so each settled row is updated at most once in it.
CREATE FUNCTION compliance_counts_settle() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('smbfleet.counts_settled_in', true) = txid_current()::text THEN
    RETURN;
  END IF;
  PERFORM set_config('smbfleet.counts_settled_in', txid_current()::text, false);
  WITH moved AS (
    DELETE FROM compliance_counts WHERE slot = pg_backend_pid() AND tx <> 0
    RETURNING policy_name, policy_version, rule_id, on_share, classification, status, n)
  INSERT INTO compliance_counts AS c
    (policy_name, policy_version, rule_id, on_share, classification, status, slot, tx, n)
    SELECT policy_name, policy_version, rule_id, on_share, classification, status,
           pg_backend_pid(), 0, sum(n)
    FROM moved GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (policy_name, policy_version, rule_id, on_share, classification, status, slot)
    WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
  WITH moved AS (
    DELETE FROM compliance_trend_counts WHERE slot = pg_backend_pid() AND tx <> 0
    RETURNING policy_name, day, status, n)
  INSERT INTO compliance_trend_counts AS c (policy_name, day, status, slot, tx, n)
    SELECT policy_name, day, status, pg_backend_pid(), 0, sum(n)
    FROM moved GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (policy_name, day, status, slot) WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
END
$$;

CREATE TYPE compliance_count_delta AS (
  host_id bigint, policy_name text, policy_version text, rule_id text, on_share boolean,
  classification text, status text, n integer);

CREATE FUNCTION compliance_results_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d compliance_count_delta[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, rule_id, share_name <> '',
                         classification, status, 1)::compliance_count_delta)
      INTO d FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, rule_id, share_name <> '',
                         classification, status, -1)::compliance_count_delta)
      INTO d FROM old_rows;
  ELSE
    SELECT array_agg(x) INTO d FROM (
      SELECT ROW(host_id, policy_name, policy_version, rule_id, share_name <> '',
                 classification, status, 1)::compliance_count_delta AS x FROM new_rows
      UNION ALL
      SELECT ROW(host_id, policy_name, policy_version, rule_id, share_name <> '',
                 classification, status, -1)::compliance_count_delta FROM old_rows) u;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM compliance_counts_settle();
  INSERT INTO compliance_counts
    (policy_name, policy_version, rule_id, on_share, classification, status, slot, tx, n)
    SELECT policy_name, policy_version, rule_id, on_share, classification, status,
           pg_backend_pid(), txid_current(), sum(n)
    FROM unnest(d) GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0;
  -- A host being deleted takes its counts with it (ON DELETE CASCADE).
  INSERT INTO compliance_host_counts AS c (host_id, policy_name, policy_version, status, n)
    SELECT u.host_id, u.policy_name, u.policy_version, u.status, sum(u.n)
    FROM unnest(d) u WHERE EXISTS (SELECT FROM hosts h WHERE h.id = u.host_id)
    GROUP BY 1, 2, 3, 4 HAVING sum(u.n) <> 0 ORDER BY 1, 2, 3, 4
  ON CONFLICT (host_id, policy_name, policy_version, status) DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM compliance_host_counts
    WHERE host_id IN (SELECT DISTINCT host_id FROM unnest(d)) AND n = 0;
  DELETE FROM compliance_host_failing WHERE host_id IN (SELECT DISTINCT host_id FROM unnest(d));
  INSERT INTO compliance_host_failing (host_id, policy_name, policy_version, since, rules)
    SELECT r.host_id, r.policy_name, r.policy_version,
           min(COALESCE((SELECT max(t.at) FROM compliance_transitions t
                         WHERE t.host_id = r.host_id AND t.policy_name = r.policy_name
                           AND t.rule_id = r.rule_id AND t.share_name = r.share_name
                           AND t.to_status = 'NON_COMPLIANT'), r.evaluated_at)),
           count(DISTINCT r.rule_id)
    FROM compliance_results r
    WHERE r.host_id IN (SELECT DISTINCT host_id FROM unnest(d)) AND r.status = 'NON_COMPLIANT'
    GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;

CREATE TRIGGER compliance_results_counted_insert AFTER INSERT ON compliance_results
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_counted();
CREATE TRIGGER compliance_results_counted_update AFTER UPDATE ON compliance_results
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_counted();
CREATE TRIGGER compliance_results_counted_delete AFTER DELETE ON compliance_results
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_counted();

CREATE FUNCTION compliance_transitions_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM compliance_counts_settle();
  IF TG_OP = 'INSERT' THEN
    INSERT INTO compliance_trend_counts (policy_name, day, status, slot, tx, n)
      SELECT policy_name, day, status, pg_backend_pid(), txid_current(), sum(n) FROM (
        SELECT policy_name, (at AT TIME ZONE 'UTC')::date AS day, to_status AS status, 1 AS n
        FROM new_rows WHERE to_status IS NOT NULL
        UNION ALL
        SELECT policy_name, (at AT TIME ZONE 'UTC')::date, from_status, -1
        FROM new_rows WHERE from_status IS NOT NULL) u
      GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
  ELSE
    INSERT INTO compliance_trend_counts (policy_name, day, status, slot, tx, n)
      SELECT policy_name, day, status, pg_backend_pid(), txid_current(), sum(n) FROM (
        SELECT policy_name, (at AT TIME ZONE 'UTC')::date AS day, to_status AS status, -1 AS n
        FROM old_rows WHERE to_status IS NOT NULL
        UNION ALL
        SELECT policy_name, (at AT TIME ZONE 'UTC')::date, from_status, 1
        FROM old_rows WHERE from_status IS NOT NULL) u
      GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER compliance_transitions_counted_insert AFTER INSERT ON compliance_transitions
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_transitions_counted();
CREATE TRIGGER compliance_transitions_counted_delete AFTER DELETE ON compliance_transitions
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_transitions_counted();

-- Folds the slots of backends that are gone into slot 0 (one fold at a time; a fold already
-- running makes this one return at once). The rows of live backends are left alone: they may
-- hold them.
CREATE FUNCTION compliance_counts_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('compliance_counts_fold')) THEN
    RETURN;
  END IF;
  WITH gone AS (
    DELETE FROM compliance_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING policy_name, policy_version, rule_id, on_share, classification, status, n)
  INSERT INTO compliance_counts AS c
    (policy_name, policy_version, rule_id, on_share, classification, status, slot, tx, n)
    SELECT policy_name, policy_version, rule_id, on_share, classification, status, 0, 0, sum(n)
    FROM gone GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (policy_name, policy_version, rule_id, on_share, classification, status, slot)
    WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM compliance_counts WHERE slot = 0 AND n = 0;
  WITH gone AS (
    DELETE FROM compliance_trend_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING policy_name, day, status, n)
  INSERT INTO compliance_trend_counts AS c (policy_name, day, status, slot, tx, n)
    SELECT policy_name, day, status, 0, 0, sum(n) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (policy_name, day, status, slot) WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM compliance_trend_counts WHERE slot = 0 AND n = 0;
END
$$;

-- What is already stored.
INSERT INTO compliance_counts
  (policy_name, policy_version, rule_id, on_share, classification, status, slot, tx, n)
  SELECT policy_name, policy_version, rule_id, share_name <> '', classification, status, 0, 0,
         count(*)
  FROM compliance_results GROUP BY 1, 2, 3, 4, 5, 6;
INSERT INTO compliance_host_counts (host_id, policy_name, policy_version, status, n)
  SELECT host_id, policy_name, policy_version, status, count(*)
  FROM compliance_results GROUP BY 1, 2, 3, 4;
INSERT INTO compliance_host_failing (host_id, policy_name, policy_version, since, rules)
  SELECT host_id, policy_name, policy_version, min(failing_since), count(DISTINCT rule_id)
  FROM (SELECT r.host_id, r.policy_name, r.policy_version, r.rule_id,
               COALESCE((SELECT max(t.at) FROM compliance_transitions t
                         WHERE t.host_id = r.host_id AND t.policy_name = r.policy_name
                           AND t.rule_id = r.rule_id AND t.share_name = r.share_name
                           AND t.to_status = 'NON_COMPLIANT'), r.evaluated_at) AS failing_since
        FROM compliance_results r WHERE r.status = 'NON_COMPLIANT') f
  GROUP BY 1, 2, 3;
INSERT INTO compliance_trend_counts (policy_name, day, status, slot, tx, n)
  SELECT policy_name, day, status, 0, 0, sum(n) FROM (
    SELECT policy_name, (at AT TIME ZONE 'UTC')::date AS day, to_status AS status, 1 AS n
    FROM compliance_transitions WHERE to_status IS NOT NULL
    UNION ALL
    SELECT policy_name, (at AT TIME ZONE 'UTC')::date, from_status, -1
    FROM compliance_transitions WHERE from_status IS NOT NULL) u
  GROUP BY 1, 2, 3 HAVING sum(n) <> 0;

-- The current counts of the active policy versions, summed over the slots: what the views
-- below, GetCompliance and the overview read.
CREATE VIEW compliance_counts_current AS
  SELECT c.policy_name, c.policy_version, c.rule_id, c.on_share, c.classification, c.status,
         sum(c.n)::bigint AS n
  FROM compliance_counts c
  JOIN policy_versions v
    ON v.policy_name = c.policy_name AND v.version = c.policy_version AND v.active
  GROUP BY 1, 2, 3, 4, 5, 6;

-- The views of 0002, same columns, from the counts.
CREATE OR REPLACE VIEW compliance_now_by_rule AS
  SELECT policy_name, rule_id,
         COALESCE(sum(n) FILTER (WHERE status = 'COMPLIANT'), 0)::bigint AS compliant,
         COALESCE(sum(n) FILTER (WHERE status = 'NON_COMPLIANT'), 0)::bigint AS non_compliant,
         COALESCE(sum(n) FILTER (WHERE status = 'WAIVED'), 0)::bigint AS waived,
         COALESCE(sum(n) FILTER (WHERE status = 'UNKNOWN'), 0)::bigint AS unknown,
         COALESCE(sum(n) FILTER (WHERE status = 'ERROR'), 0)::bigint AS errors,
         COALESCE(sum(n) FILTER (WHERE status = 'NOT_APPLICABLE'), 0)::bigint AS not_applicable,
         round(100.0 * COALESCE(sum(n) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED')), 0)
               / NULLIF(sum(n) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_counts_current GROUP BY policy_name, rule_id HAVING sum(n) > 0;

CREATE OR REPLACE VIEW compliance_now_by_classification AS
  SELECT policy_name, classification,
         COALESCE(sum(n) FILTER (WHERE status = 'COMPLIANT'), 0)::bigint AS compliant,
         COALESCE(sum(n) FILTER (WHERE status = 'NON_COMPLIANT'), 0)::bigint AS non_compliant,
         COALESCE(sum(n) FILTER (WHERE status = 'WAIVED'), 0)::bigint AS waived,
         round(100.0 * COALESCE(sum(n) FILTER (WHERE status IN ('COMPLIANT', 'WAIVED')), 0)
               / NULLIF(sum(n) FILTER (WHERE status <> 'NOT_APPLICABLE'), 0), 2) AS compliant_pct
  FROM compliance_counts_current WHERE on_share
  GROUP BY policy_name, classification HAVING sum(n) > 0;

CREATE OR REPLACE VIEW compliance_now_by_label AS
  SELECT c.policy_name, l.key AS label_key, l.value AS label_value,
         COALESCE(sum(c.n) FILTER (WHERE c.status = 'COMPLIANT'), 0)::bigint AS compliant,
         COALESCE(sum(c.n) FILTER (WHERE c.status = 'NON_COMPLIANT'), 0)::bigint
           AS non_compliant,
         COALESCE(sum(c.n) FILTER (WHERE c.status = 'WAIVED'), 0)::bigint AS waived,
         round(100.0 * COALESCE(sum(c.n) FILTER (WHERE c.status IN ('COMPLIANT', 'WAIVED')), 0)
               / NULLIF(sum(c.n) FILTER (WHERE c.status <> 'NOT_APPLICABLE'), 0), 2)
           AS compliant_pct
  FROM compliance_host_counts c
  JOIN policy_versions v
    ON v.policy_name = c.policy_name AND v.version = c.policy_version AND v.active
  JOIN hosts h ON h.id = c.host_id
  CROSS JOIN LATERAL jsonb_each_text(h.labels) l
  GROUP BY c.policy_name, l.key, l.value HAVING sum(c.n) > 0;
