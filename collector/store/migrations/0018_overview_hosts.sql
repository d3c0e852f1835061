-- The overview's count of hosts kept as hosts are added and deleted, and its hosts failing
-- longest read in the order of one index, so that GetFleetOverview and an unfiltered ListHosts
-- read neither every host nor every failing host (docs/scaling.md, "Policy change and queries
-- at 100,000 hosts").
--
-- The count of hosts is one row per writing backend (`slot` = pg_backend_pid()), as the counts
-- of 0015 and 0017: a statement trigger adds what each statement inserted or deleted to its own
-- backend's row, so two collectors storing new hosts at once never wait on one row, and a
-- reader sums the rows. host_counts_fold() adds the rows of backends that are gone into slot 0
-- (at each policy activation, with the folds of 0015 and 0017).
--
-- The hosts failing longest are ordered by `since` and then by name; the name is now a column
-- of compliance_host_failing (a host's name never changes), filled on insert, so the index
-- carries the whole order and `top` rows are read from it instead of every failing host being
-- joined with hosts and sorted.

-- The figures are filled from what is stored, then the triggers keep them: no write may land in
-- between.
LOCK TABLE hosts, compliance_host_failing IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE host_counts (
  slot integer PRIMARY KEY,
  n    bigint NOT NULL
);
INSERT INTO host_counts (slot, n) SELECT 0, count(*) FROM hosts;

CREATE FUNCTION hosts_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO host_counts AS c (slot, n)
      SELECT pg_backend_pid(), count(*) FROM new_rows HAVING count(*) > 0
    ON CONFLICT (slot) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSE
    INSERT INTO host_counts AS c (slot, n)
      SELECT pg_backend_pid(), -count(*) FROM old_rows HAVING count(*) > 0
    ON CONFLICT (slot) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER hosts_counted_insert AFTER INSERT ON hosts
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION hosts_counted();
CREATE TRIGGER hosts_counted_delete AFTER DELETE ON hosts
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION hosts_counted();

-- Emptied hosts: no host left to count.
CREATE FUNCTION hosts_counted_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM host_counts;
  RETURN NULL;
END
$$;

CREATE TRIGGER hosts_counted_truncate AFTER TRUNCATE ON hosts
  FOR EACH STATEMENT EXECUTE FUNCTION hosts_counted_truncate();

-- Folds the rows of backends that are gone into slot 0 (one fold at a time; a fold already
-- running makes this one return at once). The rows of live backends are left alone.
CREATE FUNCTION host_counts_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('host_counts_fold')) THEN
    RETURN;
  END IF;
  WITH gone AS (
    DELETE FROM host_counts
    WHERE slot <> 0 AND slot NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    RETURNING n)
  INSERT INTO host_counts AS c (slot, n)
    SELECT 0, sum(n) FROM gone HAVING count(*) > 0
  ON CONFLICT (slot) DO UPDATE SET n = c.n + EXCLUDED.n;
END
$$;

-- Each failing host's name beside its `since`, whichever statement inserts the row.
ALTER TABLE compliance_host_failing ADD COLUMN host_name text;
UPDATE compliance_host_failing f SET host_name = h.name FROM hosts h WHERE h.id = f.host_id;
ALTER TABLE compliance_host_failing ALTER COLUMN host_name SET NOT NULL;

CREATE FUNCTION compliance_host_failing_named() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT name INTO NEW.host_name FROM hosts WHERE id = NEW.host_id;
  RETURN NEW;
END
$$;

CREATE TRIGGER compliance_host_failing_named BEFORE INSERT ON compliance_host_failing
  FOR EACH ROW EXECUTE FUNCTION compliance_host_failing_named();

DROP INDEX compliance_host_failing_since;
CREATE INDEX compliance_host_failing_since
  ON compliance_host_failing (policy_name, policy_version, since, host_name COLLATE "C");
