-- History by day. The append-only tables (postures, reports, host_events,
-- compliance_transitions, host_benchmarks) become range-partitioned by their time column, one
-- partition per UTC day named <table>_pYYYYMMDD, and a DEFAULT partition, <table>_default, for
-- a time no day covers (an agent's clock far off, or a day the history job has not made yet).
-- The collector's history job (docs/collector.md "History and retention") makes the coming
-- days' partitions and drops the days wholly older than `history.retention`, except one holding
-- a row that the current state still needs (history_tables.keep_rows).
--
-- Why a day: the retention is counted in days and dropping a partition frees a whole day at
-- once, without a DELETE's dead rows and WAL; a day of hourly reports from 100,000 hosts (2.4
-- million reports) is a partition whose indexes fit in memory, and 90 days keep about 90
-- partitions per table, which PostgreSQL prunes when a query names the time.
--
-- Keys: a partitioned table's unique keys include its partition key.
--   postures          (id, stored_at). host_state names both (posture_stored_at, new), so
--                     reading a host's current posture touches one partition. Its foreign key
--                     to postures goes (a referenced partition could not be dropped): the job
--                     keeps any partition holding a current posture instead.
--   reports           (host_id, report_id, received_at). A resend arrives later, maybe another
--                     day, so a report is stored once by report_ids (host_id, report_id), a
--                     small unpartitioned table the job trims to the retention.
--   host_events       its unique key (host_id, channel, event_id, record_id, at) has `at`.
--   compliance_transitions (id, at).
--   host_benchmarks   its key has measured_at.
-- The trend's counts (compliance_trend_counts) are not history rows: dropping a day of
-- transitions leaves them (no DELETE trigger fires), so the trend keeps its old days.

CREATE TABLE history_tables (
  table_name  text PRIMARY KEY,
  time_column text NOT NULL,
  -- A condition on a row `t`: true when the current state needs it, so its day is not dropped
  -- (and the default partition keeps it). NULL: no row is needed.
  keep_rows   text
);
INSERT INTO history_tables (table_name, time_column, keep_rows) VALUES
  -- the host's current posture
  ('postures', 'stored_at',
   'EXISTS (SELECT FROM host_state s WHERE s.host_id = t.host_id AND s.posture_id = t.id)'),
  ('reports', 'received_at', NULL),
  ('host_events', 'at', NULL),
  -- the last transition into NON_COMPLIANT of a result failing now: its "failing since"
  ('compliance_transitions', 'at',
   't.to_status = ''NON_COMPLIANT'' AND EXISTS (SELECT FROM compliance_results r '
   'WHERE r.host_id = t.host_id AND r.policy_name = t.policy_name AND r.rule_id = t.rule_id '
   'AND r.share_name = t.share_name AND r.status = ''NON_COMPLIANT'' '
   'AND NOT EXISTS (SELECT FROM compliance_transitions l WHERE l.host_id = t.host_id '
   'AND l.policy_name = t.policy_name AND l.rule_id = t.rule_id '
   'AND l.share_name = t.share_name AND l.to_status = ''NON_COMPLIANT'' AND l.at > t.at))'),
  -- the host's latest benchmark run (GetHost shows it)
  ('host_benchmarks', 'measured_at',
   'NOT EXISTS (SELECT FROM host_benchmarks n WHERE n.host_id = t.host_id '
   'AND n.measured_at > t.measured_at)');

-- The partition of `tbl` for one UTC day; false when it exists. Rows of that day in the
-- default partition move into it. Made apart and attached, which locks the parent less than
-- CREATE TABLE ... PARTITION OF (writers go on); attaching builds its indexes and clones the
-- row triggers.
CREATE FUNCTION history_partition_create(tbl text, day date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  part text := tbl || '_p' || to_char(day, 'YYYYMMDD');
  col text;
  lo timestamptz := day::timestamp AT TIME ZONE 'UTC';
  hi timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
  IF to_regclass(quote_ident(part)) IS NOT NULL THEN
    RETURN false;
  END IF;
  SELECT time_column INTO STRICT col FROM history_tables WHERE table_name = tbl;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                 'INCLUDING COMPRESSION INCLUDING STORAGE)', part, tbl);
  IF to_regclass(quote_ident(tbl || '_default')) IS NOT NULL THEN
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= $1 AND %I < $2 RETURNING *) '
                   'INSERT INTO %I SELECT * FROM moved', tbl || '_default', col, col, part)
      USING lo, hi;
  END IF;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                 tbl, part, lo, hi);
  RETURN true;
END
$$;

-- The partitions of every history table for `days` days from `first_day`; the names made.
CREATE FUNCTION history_partitions_ensure(first_day date, days integer)
  RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  h record;
  d date;
BEGIN
  FOR h IN SELECT table_name FROM history_tables ORDER BY table_name LOOP
    FOR d IN SELECT generate_series(first_day, first_day + days - 1, interval '1 day')::date LOOP
      IF history_partition_create(h.table_name, d) THEN
        RETURN NEXT h.table_name || '_p' || to_char(d, 'YYYYMMDD');
      END IF;
    END LOOP;
  END LOOP;
END
$$;

-- Drops the day partitions wholly before `cutoff` that hold no row the current state needs,
-- deletes such rows from the default partitions and trims report_ids. One row per partition
-- dropped ('dropped') or kept ('kept'), and per table trimmed ('trimmed', rows deleted).
CREATE FUNCTION history_trim(cutoff timestamptz)
  RETURNS TABLE (relation text, outcome text, rows bigint) LANGUAGE plpgsql AS $$
DECLARE
  p record;
  needed boolean;
  n bigint;
BEGIN
  FOR p IN
    SELECT * FROM (
      SELECT h.keep_rows, c.relname::text AS part,
             to_date(substring(c.relname FROM '^' || h.table_name || '_p([0-9]{8})$'),
                     'YYYYMMDD') AS day
      FROM history_tables h
      JOIN pg_inherits i ON i.inhparent = to_regclass(quote_ident(h.table_name))
      JOIN pg_class c ON c.oid = i.inhrelid) d
    WHERE (d.day + 1)::timestamp AT TIME ZONE 'UTC' <= cutoff
    ORDER BY d.part
  LOOP
    needed := false;
    IF p.keep_rows IS NOT NULL THEN
      EXECUTE format('SELECT EXISTS (SELECT FROM %I t WHERE %s)', p.part, p.keep_rows)
        INTO needed;
    END IF;
    relation := p.part;
    rows := NULL;
    IF needed THEN
      outcome := 'kept';
    ELSE
      EXECUTE format('DROP TABLE %I', p.part);
      outcome := 'dropped';
    END IF;
    RETURN NEXT;
  END LOOP;
  FOR p IN SELECT table_name, time_column, keep_rows FROM history_tables ORDER BY table_name LOOP
    CONTINUE WHEN to_regclass(quote_ident(p.table_name || '_default')) IS NULL;
    EXECUTE format('DELETE FROM %I t WHERE %I < $1 AND NOT (%s)', p.table_name || '_default',
                   p.time_column, COALESCE(p.keep_rows, 'false'))
      USING cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
      relation := p.table_name || '_default';
      outcome := 'trimmed';
      rows := n;
      RETURN NEXT;
    END IF;
  END LOOP;
  DELETE FROM report_ids WHERE received_at < cutoff;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN
    relation := 'report_ids';
    outcome := 'trimmed';
    rows := n;
    RETURN NEXT;
  END IF;
END
$$;

-- Turns one table into a partitioned one with the same columns, rows, constraints, indexes,
-- foreign keys and triggers; `pk` is its new primary key (with the time column), NULL for none.
CREATE FUNCTION history_partition_table(tbl text, pk text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  old text := tbl || '_unpartitioned';
  col text;
  ddl text[];
  s text;
  d date;
BEGIN
  SELECT time_column INTO STRICT col FROM history_tables WHERE table_name = tbl;
  -- Indexes (but the primary key's), foreign keys and triggers as written, before the rename.
  SELECT array_agg(pg_get_indexdef(i.indexrelid)) INTO ddl
    FROM pg_index i WHERE i.indrelid = tbl::regclass AND NOT i.indisprimary;
  ddl := COALESCE(ddl, '{}') || ARRAY(
    SELECT format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE conrelid = tbl::regclass AND contype = 'f');
  ddl := ddl || ARRAY(
    SELECT pg_get_triggerdef(oid) FROM pg_trigger
    WHERE tgrelid = tbl::regclass AND NOT tgisinternal);

  EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, old);
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                 'INCLUDING COMPRESSION INCLUDING STORAGE) PARTITION BY RANGE (%I)', tbl, old, col);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', tbl || '_default', tbl);
  -- A partition for each day with rows (within ten years back and a week ahead: others stay
  -- in the default partition) and for yesterday to two days ahead.
  FOR d IN EXECUTE format(
      'SELECT DISTINCT (%I AT TIME ZONE ''UTC'')::date FROM %I WHERE %I >= now() - interval '
      '''3650 days'' AND %I < now() + interval ''7 days'' UNION SELECT '
      'generate_series((now() AT TIME ZONE ''UTC'')::date - 1, '
      '(now() AT TIME ZONE ''UTC'')::date + 2, interval ''1 day'')::date ORDER BY 1',
      col, old, col, col) LOOP
    PERFORM history_partition_create(tbl, d);
  END LOOP;
  EXECUTE format('INSERT INTO %I SELECT * FROM %I', tbl, old);
  -- The id sequences live on with the new table.
  FOR s IN SELECT pg_get_serial_sequence(quote_ident(old), a.attname) || ' OWNED BY '
                  || quote_ident(tbl) || '.' || quote_ident(a.attname)
           FROM pg_attribute a
           WHERE a.attrelid = old::regclass AND a.attnum > 0 AND NOT a.attisdropped
             AND pg_get_serial_sequence(quote_ident(old), a.attname) IS NOT NULL LOOP
    EXECUTE 'ALTER SEQUENCE ' || s;
  END LOOP;
  EXECUTE format('DROP TABLE %I', old);
  IF pk IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (%s)', tbl, pk);
  END IF;
  FOREACH s IN ARRAY ddl LOOP
    EXECUTE s;
  END LOOP;
END
$$;

-- host_state names its posture's partition; no foreign key to a partitioned postures.
ALTER TABLE host_state DROP CONSTRAINT host_state_posture_id_fkey;
ALTER TABLE host_state ADD COLUMN posture_stored_at timestamptz;
UPDATE host_state s SET posture_stored_at = p.stored_at FROM postures p WHERE p.id = s.posture_id;
ALTER TABLE host_state ALTER COLUMN posture_stored_at SET NOT NULL;

-- The dedup of resent reports, apart from the partitions.
CREATE TABLE report_ids (
  host_id     bigint NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  report_id   uuid NOT NULL,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (host_id, report_id)
);
CREATE INDEX report_ids_received ON report_ids (received_at);
INSERT INTO report_ids (host_id, report_id, received_at)
  SELECT host_id, report_id, received_at FROM reports;

-- The views reading these tables are bound to them: kept as written, dropped, and made again
-- on the partitioned tables (deepest last).
CREATE TEMP TABLE history_views ON COMMIT DROP AS
  WITH RECURSIVE dep (oid, depth) AS (
    SELECT r.ev_class, 1
    FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
    WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
      AND d.refobjid IN (SELECT to_regclass(quote_ident(table_name)) FROM history_tables)
      AND r.ev_class <> d.refobjid
    UNION
    SELECT r.ev_class, dep.depth + 1
    FROM dep JOIN pg_depend d ON d.refobjid = dep.oid
    JOIN pg_rewrite r ON r.oid = d.objid
    WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
      AND r.ev_class <> dep.oid)
  SELECT c.relname::text AS name, max(dep.depth) AS depth, pg_get_viewdef(c.oid) AS definition
  FROM dep JOIN pg_class c ON c.oid = dep.oid WHERE c.relkind = 'v'
  GROUP BY c.oid, c.relname;

DO $$
DECLARE
  v record;
BEGIN
  FOR v IN SELECT name FROM history_views ORDER BY depth DESC LOOP
    EXECUTE format('DROP VIEW %I', v.name);
  END LOOP;
END
$$;

SELECT history_partition_table('postures', 'id, stored_at');
SELECT history_partition_table('reports', 'host_id, report_id, received_at');
SELECT history_partition_table('host_events', NULL);  -- keyed by its unique index
SELECT history_partition_table('compliance_transitions', 'id, at');
SELECT history_partition_table('host_benchmarks',
                               'host_id, measured_at, algorithm, buffer_bytes, threads');
DROP FUNCTION history_partition_table(text, text);

DO $$
DECLARE
  v record;
BEGIN
  FOR v IN SELECT name, definition FROM history_views ORDER BY depth LOOP
    EXECUTE format('CREATE VIEW %I AS %s', v.name, v.definition);
  END LOOP;
  PERFORM smbfleet_grant_readonly();
END
$$;

-- The current posture's JSON for share_encryption, from its own partition.
CREATE OR REPLACE VIEW share_encryption AS
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
  LEFT JOIN postures p ON p.id = hs.posture_id AND p.stored_at = hs.posture_stored_at
  WHERE s.classification <> '';

-- A posture's JSON leaves out its sessions and events: they change with nearly every report and
-- are most of its size, and nothing reads them there (the current sessions are host_sessions,
-- the events host_events, filled from the JSON by this trigger before it is trimmed; the binary
-- `posture` keeps the whole posture). Rows stored before this migration keep theirs until the
-- retention drops their day.
DROP TRIGGER postures_host_events ON postures;
CREATE OR REPLACE FUNCTION host_events_from_posture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO host_events (host_id, at, event_id, channel, provider, record_id, level, kind,
                           client_address, client_name, user_name, share_name, status,
                           posture_id)
  SELECT NEW.host_id, r.*, NEW.id
  FROM host_events_rows(NEW.posture_json, COALESCE(NEW.collected_at, NEW.stored_at)) r
  ON CONFLICT DO NOTHING;
  NEW.posture_json := NEW.posture_json - 'sessions' - 'events';
  RETURN NEW;
END
$$;
CREATE TRIGGER postures_host_events BEFORE INSERT ON postures
  FOR EACH ROW EXECUTE FUNCTION host_events_from_posture();
