-- A policy change re-evaluates every host, and most results come out as they were but for their
-- policy version and evaluation time; the collector now sets those two columns in place instead
-- of deleting and inserting the row again (docs/scaling.md, "Policy change and queries at
-- 100,000 hosts"). What makes such an update cheap:
--
-- * Neither column is in an index of compliance_results, so the update can be HOT (the new row
--   on the old row's page, no index entry written) when the page has room: pages are now filled
--   to half, so each row's next version fits beside it. A page's dead versions are pruned when
--   it is next updated. Existing pages keep their fill until their rows are written again.
--
-- * The reference from each result to its policy version (the foreign key of 0002) was checked
--   row by row, a query and a row lock on policy_versions for each of the 20,000 rows of a page;
--   it is now checked once per statement for the distinct versions the statement wrote, with
--   the same lock (FOR KEY SHARE: a version being deleted waits, or is refused once the results
--   are committed).
--
-- * The count trigger of 0015 sums a statement's rows per counted key in one pass, and finds
--   the hosts' counts by index (it scanned every host's counts to remove those that reached 0).

ALTER TABLE compliance_results SET (fillfactor = 50);

ALTER TABLE compliance_results DROP CONSTRAINT compliance_results_policy_name_policy_version_fkey;

CREATE FUNCTION compliance_results_version_checked() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing record;
BEGIN
  PERFORM FROM policy_versions v
    WHERE (v.policy_name, v.version) IN (SELECT DISTINCT policy_name, policy_version FROM new_rows)
    FOR KEY SHARE OF v;
  SELECT n.policy_name, n.policy_version INTO missing
    FROM (SELECT DISTINCT policy_name, policy_version FROM new_rows) n
    WHERE NOT EXISTS (SELECT FROM policy_versions v
                      WHERE v.policy_name = n.policy_name AND v.version = n.policy_version)
    LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING
      MESSAGE = format('compliance_results: policy %s version %s is not in policy_versions',
                       missing.policy_name, missing.policy_version);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER compliance_results_version_checked_insert AFTER INSERT ON compliance_results
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_version_checked();
CREATE TRIGGER compliance_results_version_checked_update AFTER UPDATE ON compliance_results
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION compliance_results_version_checked();

-- A version that results still name is neither deleted nor renamed (what the foreign key's
-- NO ACTION refused).
CREATE FUNCTION policy_versions_referenced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  used record;
BEGIN
  SELECT o.policy_name, o.version INTO used
    FROM old_rows o
    WHERE NOT EXISTS (SELECT FROM policy_versions v
                      WHERE v.policy_name = o.policy_name AND v.version = o.version)
      AND EXISTS (SELECT FROM compliance_results r
                  WHERE r.policy_name = o.policy_name AND r.policy_version = o.version)
    LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING
      MESSAGE = format('policy_versions: policy %s version %s still has compliance results',
                       used.policy_name, used.version);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER policy_versions_referenced_delete AFTER DELETE ON policy_versions
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION policy_versions_referenced();
CREATE TRIGGER policy_versions_referenced_update AFTER UPDATE ON policy_versions
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION policy_versions_referenced();

-- 0015's function, the same counts: each statement's rows summed per counted key in one pass
-- over its transition tables (not one composite value per row, unnested again for each
-- count), and the hosts it touched found by index.
CREATE OR REPLACE FUNCTION compliance_results_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  by_rule compliance_count_delta[];  -- per policy version, rule, classification and status
  by_host compliance_count_delta[];  -- per host, policy version and status
  touched bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    WITH u AS (SELECT host_id, policy_name, policy_version, rule_id, share_name <> '' AS on_share,
                      classification, status, 1 AS n
               FROM new_rows)
    SELECT (SELECT array_agg(ROW(NULL, policy_name, policy_version, rule_id, on_share,
                                 classification, status, n)::compliance_count_delta)
            FROM (SELECT policy_name, policy_version, rule_id, on_share, classification, status,
                         sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) g),
           (SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                                 n)::compliance_count_delta)
            FROM (SELECT host_id, policy_name, policy_version, status, sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0) g),
           (SELECT array_agg(DISTINCT host_id) FROM u)
      INTO by_rule, by_host, touched;
  ELSIF TG_OP = 'DELETE' THEN
    WITH u AS (SELECT host_id, policy_name, policy_version, rule_id, share_name <> '' AS on_share,
                      classification, status, -1 AS n
               FROM old_rows)
    SELECT (SELECT array_agg(ROW(NULL, policy_name, policy_version, rule_id, on_share,
                                 classification, status, n)::compliance_count_delta)
            FROM (SELECT policy_name, policy_version, rule_id, on_share, classification, status,
                         sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) g),
           (SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                                 n)::compliance_count_delta)
            FROM (SELECT host_id, policy_name, policy_version, status, sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0) g),
           (SELECT array_agg(DISTINCT host_id) FROM u)
      INTO by_rule, by_host, touched;
  ELSE
    WITH u AS (SELECT host_id, policy_name, policy_version, rule_id, share_name <> '' AS on_share,
                      classification, status, 1 AS n
               FROM new_rows
               UNION ALL
               SELECT host_id, policy_name, policy_version, rule_id, share_name <> '' AS on_share,
                      classification, status, -1
               FROM old_rows)
    SELECT (SELECT array_agg(ROW(NULL, policy_name, policy_version, rule_id, on_share,
                                 classification, status, n)::compliance_count_delta)
            FROM (SELECT policy_name, policy_version, rule_id, on_share, classification, status,
                         sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0) g),
           (SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                                 n)::compliance_count_delta)
            FROM (SELECT host_id, policy_name, policy_version, status, sum(n)::integer AS n
                  FROM u GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0) g),
           (SELECT array_agg(DISTINCT host_id) FROM u)
      INTO by_rule, by_host, touched;
  END IF;
  IF touched IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM compliance_counts_settle();
  INSERT INTO compliance_counts
    (policy_name, policy_version, rule_id, on_share, classification, status, slot, tx, n)
    SELECT policy_name, policy_version, rule_id, on_share, classification, status,
           pg_backend_pid(), txid_current(), n
    FROM unnest(by_rule);
  -- A host being deleted takes its counts with it (ON DELETE CASCADE).
  INSERT INTO compliance_host_counts AS c (host_id, policy_name, policy_version, status, n)
    SELECT u.host_id, u.policy_name, u.policy_version, u.status, u.n
    FROM unnest(by_host) u WHERE u.host_id IN (SELECT h.id FROM hosts h WHERE h.id = ANY(touched))
    ORDER BY 1, 2, 3, 4
  ON CONFLICT (host_id, policy_name, policy_version, status) DO UPDATE SET n = c.n + EXCLUDED.n;
  DELETE FROM compliance_host_counts WHERE host_id = ANY(touched) AND n = 0;
  DELETE FROM compliance_host_failing WHERE host_id = ANY(touched);
  -- Since when: the last transition into NON_COMPLIANT of each failing result, read for all
  -- the hosts at once rather than one lookup per result.
  INSERT INTO compliance_host_failing (host_id, policy_name, policy_version, since, rules)
    SELECT r.host_id, r.policy_name, r.policy_version, min(COALESCE(t.at, r.evaluated_at)),
           count(DISTINCT r.rule_id)
    FROM compliance_results r
    LEFT JOIN (SELECT host_id, policy_name, rule_id, share_name, max(at) AS at
               FROM compliance_transitions
               WHERE host_id = ANY(touched) AND to_status = 'NON_COMPLIANT'
               GROUP BY 1, 2, 3, 4) t
      ON t.host_id = r.host_id AND t.policy_name = r.policy_name AND t.rule_id = r.rule_id
         AND t.share_name = r.share_name
    WHERE r.host_id = ANY(touched) AND r.status = 'NON_COMPLIANT'
    GROUP BY 1, 2, 3;
  RETURN NULL;
END
$$;

-- 0017's function, the same counts: the statement's rows summed per host, policy version and
-- status in one pass (not one composite value per row) before they are counted under the
-- hosts' labels.
CREATE OR REPLACE FUNCTION compliance_results_label_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d compliance_count_delta[];
  touched bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                         n)::compliance_count_delta), array_agg(DISTINCT host_id)
      INTO d, touched
      FROM (SELECT host_id, policy_name, policy_version, status, count(*)::integer AS n
            FROM new_rows GROUP BY 1, 2, 3, 4) g;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                         n)::compliance_count_delta), array_agg(DISTINCT host_id)
      INTO d, touched
      FROM (SELECT host_id, policy_name, policy_version, status, -count(*)::integer AS n
            FROM old_rows GROUP BY 1, 2, 3, 4) g;
  ELSE
    SELECT array_agg(ROW(host_id, policy_name, policy_version, '', false, '', status,
                         n)::compliance_count_delta), array_agg(DISTINCT host_id)
      INTO d, touched
      FROM (SELECT host_id, policy_name, policy_version, status, sum(n)::integer AS n
            FROM (SELECT host_id, policy_name, policy_version, status, 1 AS n FROM new_rows
                  UNION ALL
                  SELECT host_id, policy_name, policy_version, status, -1 FROM old_rows) u
            GROUP BY 1, 2, 3, 4) g;
  END IF;
  IF d IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM compliance_label_counts_lock(ARRAY(
    SELECT h.name FROM hosts h WHERE h.id = ANY(touched)));
  IF NOT EXISTS (
      SELECT FROM hosts h JOIN host_labels hl ON hl.host = h.name WHERE h.id = ANY(touched)) THEN
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
