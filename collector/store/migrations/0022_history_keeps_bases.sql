-- The default partition is trimmed row by row at the cutoff, which is seldom a day's start. A
-- posture stored against its day's base (0019) after the cutoff kept its row while the base,
-- before the cutoff, was deleted: that posture could no longer be read, and its JSON in
-- posture_documents lost every member it shares with the base. Only the base of a host's
-- current posture was kept.
--
-- A table's keep_rows may now name the cutoff as $1, and the postures' keeps a plain posture
-- that a posture at or after the cutoff is stored against. A base and its postures share a UTC
-- day (collector/store/postgres/host_store.cc), so only a base whose day the cutoff falls in
-- is looked up; a day partition wholly before the cutoff is dropped as before.
UPDATE history_tables SET keep_rows =
  'EXISTS (SELECT FROM host_state s WHERE s.host_id = t.host_id AND (s.posture_id = t.id '
  'OR EXISTS (SELECT FROM postures c WHERE c.id = s.posture_id '
  'AND c.stored_at = s.posture_stored_at AND c.base_id = t.id '
  'AND c.base_stored_at = t.stored_at))) '
  'OR (t.base_id IS NULL AND date_trunc(''day'', t.stored_at, ''UTC'') + interval ''1 day'' > $1 '
  'AND EXISTS (SELECT FROM postures c WHERE c.host_id = t.host_id AND c.stored_at >= $1 '
  'AND c.stored_at < date_trunc(''day'', t.stored_at, ''UTC'') + interval ''1 day'' '
  'AND c.base_id = t.id AND c.base_stored_at = t.stored_at))'
WHERE table_name = 'postures';

-- 0020's function with the cutoff passed to keep_rows as $1.
CREATE OR REPLACE FUNCTION history_trim_table(tbl text, cutoff timestamptz)
  RETURNS TABLE (relation text, outcome text, rows bigint) LANGUAGE plpgsql AS $$
DECLARE
  p record;
  needed boolean;
  n bigint;
BEGIN
  IF tbl = 'report_ids' THEN
    DELETE FROM report_ids WHERE received_at < cutoff;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
      relation := 'report_ids';
      outcome := 'trimmed';
      rows := n;
      RETURN NEXT;
    END IF;
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT FROM history_tables h WHERE h.table_name = tbl) THEN
    RAISE EXCEPTION 'history_trim_table: % is not a history table', tbl;
  END IF;
  FOR p IN
    SELECT * FROM (
      SELECT h.keep_rows, c.relname::text AS part,
             to_date(substring(c.relname FROM '^' || h.table_name || '_p([0-9]{8})$'),
                     'YYYYMMDD') AS day
      FROM history_tables h
      JOIN pg_inherits i ON i.inhparent = to_regclass(quote_ident(h.table_name))
      JOIN pg_class c ON c.oid = i.inhrelid
      WHERE h.table_name = tbl) d
    WHERE (d.day + 1)::timestamp AT TIME ZONE 'UTC' <= cutoff
    ORDER BY d.part
  LOOP
    needed := false;
    IF p.keep_rows IS NOT NULL THEN
      EXECUTE format('SELECT EXISTS (SELECT FROM %I t WHERE %s)', p.part, p.keep_rows)
        INTO needed USING cutoff;
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
  SELECT h.table_name, h.time_column, h.keep_rows INTO p FROM history_tables h
    WHERE h.table_name = tbl;
  IF to_regclass(quote_ident(p.table_name || '_default')) IS NOT NULL THEN
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
  END IF;
END
$$;
