-- The overview's session, share encryption and per-label figures kept as their rows change, so
-- that GetFleetOverview reads a few hundred rows instead of every live session, every classified
-- share with its host's posture JSON and the per-host counts of every labelled host
-- (docs/scaling.md, "Policy change and queries at 100,000 hosts"). The pattern of 0015: statement triggers on host_sessions and host_shares keep them in
-- the transaction that writes the rows, whichever statement does it (a report's
-- ReplaceSessions and ReplaceShares, an evaluation's classifications, a host's deletion
-- cascading). The fleet-wide counts are rows per writing backend (`slot` = pg_backend_pid())
-- and per transaction (`tx`), settled by the backend's next transaction
-- (fleet_counts_settle) and folded by fleet_counts_fold() at each policy activation. The
-- per-host figure (hosts.exposed_sessions) is recounted from the host's own rows; writers of a
-- host's sessions hold its row lock in hosts (the report path does), so two never race on it.

-- The tables are filled from what is stored, then the triggers keep them: no write may land in
-- between.
LOCK TABLE hosts, host_sessions, host_shares, host_labels, compliance_results
  IN SHARE ROW EXCLUSIVE MODE;

-- A share is encrypted when it encrypts or its server encrypts every share (EncryptData of the
-- server, in the same posture). The server's setting was read from the host's latest posture
-- JSON; it is now a column of each share row, written with it.
ALTER TABLE host_shares ADD COLUMN server_encrypt_data boolean;
UPDATE host_shares s
  SET server_encrypt_data = (p.posture_json -> 'server' ->> 'encryptData')::boolean
  FROM host_state st JOIN postures p ON p.id = st.posture_id
  WHERE st.host_id = s.host_id AND p.posture_json -> 'server' ? 'encryptData';

-- Each host's exposed sessions (unsigned: signing NONE; or a dialect below SMB 3.0), for the
-- overview's hosts with most of them: read in the order of the index below.
ALTER TABLE hosts ADD COLUMN exposed_sessions integer NOT NULL DEFAULT 0;
UPDATE hosts h SET exposed_sessions = e.n
  FROM (SELECT host_id, count(*)::integer AS n FROM host_sessions
        WHERE signing = 'PROTECTION_NONE'
           OR dialect IN ('DIALECT_SMB1', 'DIALECT_SMB_2_0_2', 'DIALECT_SMB_2_1')
        GROUP BY host_id) e
  WHERE e.host_id = h.id;
CREATE INDEX hosts_exposed_sessions ON hosts (exposed_sessions DESC, name COLLATE "C")
  WHERE exposed_sessions > 0;

-- Live sessions by dialect, signing and encryption.
CREATE TABLE session_counts (
  dialect    text NOT NULL,
  signing    text NOT NULL,
  encryption text NOT NULL,
  slot       integer NOT NULL,
  tx         bigint NOT NULL,  -- 0: settled; else the transaction whose changes these are
  n          bigint NOT NULL
);
CREATE UNIQUE INDEX session_counts_settled
  ON session_counts (dialect, signing, encryption, slot) WHERE tx = 0;
CREATE INDEX session_counts_unsettled ON session_counts (slot) WHERE tx <> 0;

-- Classified shares by classification and whether they are encrypted.
CREATE TABLE share_encryption_counts (
  classification text NOT NULL,
  encrypted      boolean NOT NULL,
  slot           integer NOT NULL,
  tx             bigint NOT NULL,
  n              bigint NOT NULL
);
CREATE UNIQUE INDEX share_encryption_counts_settled
  ON share_encryption_counts (classification, encrypted, slot) WHERE tx = 0;
CREATE INDEX share_encryption_counts_unsettled ON share_encryption_counts (slot) WHERE tx <> 0;

-- Current results of hosts with a trusted label (host_labels, by host name) by policy version,
-- label and status: the overview's per-label slice. Kept from both sides: a host's results
-- changing (its labels at that moment) and a host's labels changing (its results at that
-- moment). Both take a lock on the host's name first (compliance_label_counts_lock), so one
-- waits for the other and then reads what it committed; a lock on the name, not on the hosts
-- row, because labels may be set while the host's first report is being stored.
CREATE TABLE compliance_label_counts (
  policy_name    text NOT NULL,
  policy_version text NOT NULL,
  key            text NOT NULL,
  value          text NOT NULL,
  status         text NOT NULL,
  slot           integer NOT NULL,
  tx             bigint NOT NULL,
  n              bigint NOT NULL
);
CREATE UNIQUE INDEX compliance_label_counts_settled
  ON compliance_label_counts (policy_name, policy_version, key, value, status, slot)
  WHERE tx = 0;
CREATE INDEX compliance_label_counts_unsettled ON compliance_label_counts (slot) WHERE tx <> 0;

INSERT INTO compliance_label_counts
  (policy_name, policy_version, key, value, status, slot, tx, n)
  SELECT c.policy_name, c.policy_version, hl.key, hl.value, c.status, 0, 0, sum(c.n)
  FROM compliance_host_counts c JOIN hosts h ON h.id = c.host_id
  JOIN host_labels hl ON hl.host = h.name
  GROUP BY 1, 2, 3, 4, 5;
INSERT INTO session_counts (dialect, signing, encryption, slot, tx, n)
  SELECT dialect, signing, encryption, 0, 0, count(*) FROM host_sessions GROUP BY 1, 2, 3;
INSERT INTO share_encryption_counts (classification, encrypted, slot, tx, n)
  SELECT classification, encrypt_data IS TRUE OR server_encrypt_data IS TRUE, 0, 0, count(*)
  FROM host_shares WHERE classification <> '' GROUP BY 1, 2;

-- Adds what this backend's earlier transactions inserted into its settled rows; once per
-- transaction (before its first change), so each settled row is updated at most once in it.
CREATE FUNCTION fleet_counts_settle() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('smbfleet.fleet_counts_settled_in', true) = txid_current()::text THEN
    RETURN;
  END IF;
  PERFORM set_config('smbfleet.fleet_counts_settled_in', txid_current()::text, false);
  WITH moved AS (
    DELETE FROM session_counts WHERE slot = pg_backend_pid() AND tx <> 0
    RETURNING dialect, signing, encryption, n)
  INSERT INTO session_counts AS c (dialect, signing, encryption, slot, tx, n)
    SELECT dialect, signing, encryption, pg_backend_pid(), 0, sum(n)
    FROM moved GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (dialect, signing, encryption, slot) WHERE tx = 0
    DO UPDATE SET n = c.n + EXCLUDED.n;
  WITH moved AS (
    DELETE FROM share_encryption_counts WHERE slot = pg_backend_pid() AND tx <> 0
    RETURNING classification, encrypted, n)
  INSERT INTO share_encryption_counts AS c (classification, encrypted, slot, tx, n)
    SELECT classification, encrypted, pg_backend_pid(), 0, sum(n)
    FROM moved GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (classification, encrypted, slot) WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
  WITH moved AS (
    DELETE FROM compliance_label_counts WHERE slot = pg_backend_pid() AND tx <> 0
    RETURNING policy_name, policy_version, key, value, status, n)
  INSERT INTO compliance_label_counts AS c
    (policy_name, policy_version, key, value, status, slot, tx, n)
    SELECT policy_name, policy_version, key, value, status, pg_backend_pid(), 0, sum(n)
    FROM moved GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (policy_name, policy_version, key, value, status, slot) WHERE tx = 0
    DO UPDATE SET n = c.n + EXCLUDED.n;
END
$$;

CREATE TYPE session_count_delta AS (
  host_id bigint, dialect text, signing text, encryption text, n integer);

CREATE FUNCTION host_sessions_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d session_count_delta[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(host_id, dialect, signing, encryption, 1)::session_count_delta)
      INTO d FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(host_id, dialect, signing, encryption, -1)::session_count_delta)
      INTO d FROM old_rows;
  ELSE
    SELECT array_agg(x) INTO d FROM (
      SELECT ROW(host_id, dialect, signing, encryption, 1)::session_count_delta AS x
      FROM new_rows
      UNION ALL
      SELECT ROW(host_id, dialect, signing, encryption, -1)::session_count_delta
      FROM old_rows) u;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM fleet_counts_settle();
  INSERT INTO session_counts (dialect, signing, encryption, slot, tx, n)
    SELECT dialect, signing, encryption, pg_backend_pid(), txid_current(), sum(n)
    FROM unnest(d) GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
  -- Recounted from the host's rows; a host being deleted has no row left to update.
  UPDATE hosts h SET exposed_sessions = e.n
    FROM (SELECT u.host_id,
                 (SELECT count(*) FROM host_sessions s
                  WHERE s.host_id = u.host_id
                    AND (s.signing = 'PROTECTION_NONE'
                         OR s.dialect IN ('DIALECT_SMB1', 'DIALECT_SMB_2_0_2', 'DIALECT_SMB_2_1'))
                 )::integer AS n
          FROM (SELECT DISTINCT host_id FROM unnest(d)) u) e
    WHERE h.id = e.host_id AND h.exposed_sessions <> e.n;
  RETURN NULL;
END
$$;

CREATE TRIGGER host_sessions_counted_insert AFTER INSERT ON host_sessions
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_sessions_counted();
CREATE TRIGGER host_sessions_counted_update AFTER UPDATE ON host_sessions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_sessions_counted();
CREATE TRIGGER host_sessions_counted_delete AFTER DELETE ON host_sessions
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_sessions_counted();

CREATE TYPE share_encryption_delta AS (classification text, encrypted boolean, n integer);

CREATE FUNCTION host_shares_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d share_encryption_delta[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(classification, encrypt_data IS TRUE OR server_encrypt_data IS TRUE,
                         1)::share_encryption_delta)
      INTO d FROM new_rows WHERE classification <> '';
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(classification, encrypt_data IS TRUE OR server_encrypt_data IS TRUE,
                         -1)::share_encryption_delta)
      INTO d FROM old_rows WHERE classification <> '';
  ELSE
    SELECT array_agg(x) INTO d FROM (
      SELECT ROW(classification, encrypt_data IS TRUE OR server_encrypt_data IS TRUE,
                 1)::share_encryption_delta AS x
      FROM new_rows WHERE classification <> ''
      UNION ALL
      SELECT ROW(classification, encrypt_data IS TRUE OR server_encrypt_data IS TRUE,
                 -1)::share_encryption_delta
      FROM old_rows WHERE classification <> '') u;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  -- An evaluation rewrites classifications that mostly stay as they were: nothing to add.
  IF NOT EXISTS (SELECT FROM unnest(d) GROUP BY classification, encrypted HAVING sum(n) <> 0)
  THEN
    RETURN NULL;
  END IF;
  PERFORM fleet_counts_settle();
  INSERT INTO share_encryption_counts (classification, encrypted, slot, tx, n)
    SELECT classification, encrypted, pg_backend_pid(), txid_current(), sum(n)
    FROM unnest(d) GROUP BY 1, 2 HAVING sum(n) <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER host_shares_counted_insert AFTER INSERT ON host_shares
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_shares_counted();
CREATE TRIGGER host_shares_counted_update AFTER UPDATE ON host_shares
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_shares_counted();
CREATE TRIGGER host_shares_counted_delete AFTER DELETE ON host_shares
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_shares_counted();

-- Serialises the label counts' writers of the hosts named, one lock per name in name order
-- (as evaluations lock hosts), held until the transaction ends.
CREATE FUNCTION compliance_label_counts_lock(names text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  n text;
BEGIN
  FOR n IN SELECT DISTINCT u FROM unnest(names) u ORDER BY u LOOP
    PERFORM pg_advisory_xact_lock(hashtext('compliance_label_counts'), hashtext(n));
  END LOOP;
END
$$;

-- A host's results changing: the change counted under each of its trusted labels. A host being
-- deleted has no row left here (its labels' counts were taken out before, below).
CREATE FUNCTION compliance_results_label_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d compliance_count_delta[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                         1)::compliance_count_delta)
      INTO d FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                         -1)::compliance_count_delta)
      INTO d FROM old_rows;
  ELSE
    SELECT array_agg(x) INTO d FROM (
      SELECT ROW(host_id, policy_name, policy_version, '', false, '', status,
                 1)::compliance_count_delta AS x FROM new_rows
      UNION ALL
      SELECT ROW(host_id, policy_name, policy_version, '', false, '', status,
                 -1)::compliance_count_delta FROM old_rows) u;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM compliance_label_counts_lock(ARRAY(
    SELECT h.name FROM hosts h WHERE h.id IN (SELECT DISTINCT host_id FROM unnest(d))));
  IF NOT EXISTS (
      SELECT FROM hosts h JOIN host_labels hl ON hl.host = h.name
      WHERE h.id IN (SELECT DISTINCT host_id FROM unnest(d))) THEN
    RETURN NULL;
  END IF;
  PERFORM fleet_counts_settle();
  INSERT INTO compliance_label_counts
    (policy_name, policy_version, key, value, status, slot, tx, n)
    SELECT u.policy_name, u.policy_version, hl.key, hl.value, u.status, pg_backend_pid(),
           txid_current(), sum(u.n)
    FROM unnest(d) u JOIN hosts h ON h.id = u.host_id JOIN host_labels hl ON hl.host = h.name
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(u.n) <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER compliance_results_label_counted_insert AFTER INSERT ON compliance_results
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_label_counted();
CREATE TRIGGER compliance_results_label_counted_update AFTER UPDATE ON compliance_results
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_label_counted();
CREATE TRIGGER compliance_results_label_counted_delete AFTER DELETE ON compliance_results
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_label_counted();

CREATE TYPE host_label_delta AS (host text, key text, value text, n integer);

-- A host's labels changing: its current results counted under the new label, taken out of the
-- old. The host's name is locked first, so an evaluation of it either committed before (its
-- results are read here) or waits and then sees these labels.
CREATE FUNCTION host_labels_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d host_label_delta[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(host, key, value, 1)::host_label_delta) INTO d FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(host, key, value, -1)::host_label_delta) INTO d FROM old_rows;
  ELSE
    SELECT array_agg(x) INTO d FROM (
      SELECT ROW(host, key, value, 1)::host_label_delta AS x FROM new_rows
      UNION ALL
      SELECT ROW(host, key, value, -1)::host_label_delta FROM old_rows) u;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM compliance_label_counts_lock(ARRAY(SELECT host FROM unnest(d)));
  PERFORM fleet_counts_settle();
  INSERT INTO compliance_label_counts
    (policy_name, policy_version, key, value, status, slot, tx, n)
    SELECT c.policy_name, c.policy_version, u.key, u.value, c.status, pg_backend_pid(),
           txid_current(), sum(u.n * c.n)
    FROM unnest(d) u JOIN hosts h ON h.name = u.host
    JOIN compliance_host_counts c ON c.host_id = h.id
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(u.n * c.n) <> 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER host_labels_counted_insert AFTER INSERT ON host_labels
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_labels_counted();
CREATE TRIGGER host_labels_counted_update AFTER UPDATE ON host_labels
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_labels_counted();
CREATE TRIGGER host_labels_counted_delete AFTER DELETE ON host_labels
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION host_labels_counted();

-- A host being deleted: its results leave its labels' counts here, while they are still there
-- (its labels stay: they are kept by name, for a host enrolled again).
CREATE FUNCTION hosts_label_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM compliance_label_counts_lock(ARRAY[OLD.name]);
  IF EXISTS (SELECT FROM host_labels WHERE host = OLD.name) THEN
    PERFORM fleet_counts_settle();
    INSERT INTO compliance_label_counts
      (policy_name, policy_version, key, value, status, slot, tx, n)
      SELECT c.policy_name, c.policy_version, hl.key, hl.value, c.status, pg_backend_pid(),
             txid_current(), -sum(c.n)
      FROM compliance_host_counts c JOIN host_labels hl ON hl.host = OLD.name
      WHERE c.host_id = OLD.id
      GROUP BY 1, 2, 3, 4, 5 HAVING sum(c.n) <> 0;
  END IF;
  RETURN OLD;
END
$$;

CREATE TRIGGER hosts_label_counts_deleted BEFORE DELETE ON hosts
  FOR EACH ROW EXECUTE FUNCTION hosts_label_counts_deleted();

-- Folds the slots of backends that are gone into slot 0 (one fold at a time; a fold already
-- running makes this one return at once). The rows of live backends are left alone.
CREATE FUNCTION fleet_counts_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('fleet_counts_fold')) THEN
    RETURN;
  END IF;
  WITH gone AS (
    DELETE FROM session_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING dialect, signing, encryption, n)
  INSERT INTO session_counts AS c (dialect, signing, encryption, slot, tx, n)
    SELECT dialect, signing, encryption, 0, 0, sum(n) FROM gone
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (dialect, signing, encryption, slot) WHERE tx = 0
    DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM session_counts WHERE slot = 0 AND n = 0;
  WITH gone AS (
    DELETE FROM share_encryption_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING classification, encrypted, n)
  INSERT INTO share_encryption_counts AS c (classification, encrypted, slot, tx, n)
    SELECT classification, encrypted, 0, 0, sum(n) FROM gone GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (classification, encrypted, slot) WHERE tx = 0 DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM share_encryption_counts WHERE slot = 0 AND n = 0;
  WITH gone AS (
    DELETE FROM compliance_label_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING policy_name, policy_version, key, value, status, n)
  INSERT INTO compliance_label_counts AS c
    (policy_name, policy_version, key, value, status, slot, tx, n)
    SELECT policy_name, policy_version, key, value, status, 0, 0, sum(n) FROM gone
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (policy_name, policy_version, key, value, status, slot) WHERE tx = 0
    DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM compliance_label_counts WHERE slot = 0 AND n = 0;
END
$$;

-- Grafana's share_encryption (0009), same columns, from the column instead of the JSON.
CREATE OR REPLACE VIEW share_encryption AS
  SELECT h.name AS host, h.labels, h.platform, s.name AS share, s.classification,
         s.classification_rule, s.encrypt_data, s.server_encrypt_data,
         CASE
           WHEN s.encrypt_data OR s.server_encrypt_data THEN true
           WHEN s.encrypt_data IS NULL OR s.server_encrypt_data IS NULL THEN NULL
           ELSE false
         END AS encrypted
  FROM host_shares s
  JOIN hosts h ON h.id = s.host_id
  WHERE s.classification <> '';
