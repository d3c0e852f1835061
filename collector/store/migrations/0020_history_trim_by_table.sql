-- The history job trims one table at a time, each in a transaction of its own
-- (collector/store/postgres/history_store.cc). Dropping a day partition locks its table; a trim
-- that dropped several tables' days in one transaction held the first table's lock while it
-- waited for the next, and a reader holding the next (reading a host reads postures, then
-- host_benchmarks) and waiting for the first deadlocked with it. Making partitions was split
-- the same way for the same reason.

-- What history_trim does, for one table of history_tables (its day partitions wholly before
-- `cutoff` that hold no row the current state needs, then its default partition), or for
-- 'report_ids'. The same rows as history_trim's for that table.
CREATE FUNCTION history_trim_table(tbl text, cutoff timestamptz)
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

-- history_trim keeps its meaning for whoever calls it by hand: every table in one transaction.
CREATE OR REPLACE FUNCTION history_trim(cutoff timestamptz)
  RETURNS TABLE (relation text, outcome text, rows bigint) LANGUAGE sql AS $$
  SELECT t.* FROM (SELECT table_name FROM history_tables UNION ALL SELECT 'report_ids') h,
                  LATERAL history_trim_table(h.table_name, cutoff) t
$$;
