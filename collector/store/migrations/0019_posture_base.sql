-- A host's postures of one UTC day stored against that day's base: its first posture of the
-- day is stored whole (as every row before this migration), and each later one names it in
-- base_id and base_stored_at and keeps only what differs from it:
--   posture       an LZ4 block whose dictionary is the base's binary posture
--                 (collector/store/postgres/posture_codec.h), made by the collector;
--   posture_json  the top-level members that differ from the base's JSON (a member the base
--                 has and this posture has not: JSON null), made by the trigger below.
-- posture_json_whole(posture_json, base's posture_json) and the view posture_documents give
-- the whole JSON back. A posture and its base are in the same day's partition, so dropping the
-- day drops them together. Rows stored before keep base_id NULL and read as they are.
ALTER TABLE postures ADD COLUMN base_id bigint;
ALTER TABLE postures ADD COLUMN base_stored_at timestamptz;

-- The whole JSON of a posture from its own and its base's (NULL: it has no base).
CREATE FUNCTION posture_json_whole(own jsonb, base jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN base IS NULL THEN own ELSE
    (SELECT COALESCE(jsonb_object_agg(m.key, m.value), '{}'::jsonb)
     FROM jsonb_each(base || own) m WHERE m.value <> 'null'::jsonb) END
$$;

-- After postures_host_events (triggers fire in name order): the JSON without sessions and
-- events, kept as its difference from the base's.
CREATE FUNCTION postures_json_against_base() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  base jsonb;
BEGIN
  IF NEW.base_id IS NULL THEN
    RETURN NEW;
  END IF;
  -- Planned for these values each time (a saved plan would lock every partition, the default
  -- one too, which the history job holds while it attaches a day: a deadlock), the values as
  -- parameters.
  EXECUTE 'SELECT b.posture_json FROM postures b WHERE b.id = $1 AND b.stored_at = $2 '
          'AND b.host_id = $3 AND b.base_id IS NULL'
    INTO base USING NEW.base_id, NEW.base_stored_at, NEW.host_id;
  IF base IS NULL THEN
    RAISE EXCEPTION 'posture of report % names base posture % (%), which is not a plain '
                    'posture of its host', NEW.report_id, NEW.base_id, NEW.base_stored_at;
  END IF;
  NEW.posture_json := (
    SELECT COALESCE(jsonb_object_agg(d.key, d.value), '{}'::jsonb) FROM (
      SELECT n.key, n.value FROM jsonb_each(NEW.posture_json) n
      WHERE base -> n.key IS DISTINCT FROM n.value
      UNION ALL
      SELECT b.key, 'null'::jsonb FROM jsonb_each(base) b WHERE NOT NEW.posture_json ? b.key) d);
  RETURN NEW;
END
$$;
CREATE TRIGGER postures_json_against_base BEFORE INSERT ON postures
  FOR EACH ROW EXECUTE FUNCTION postures_json_against_base();

-- Every posture with its whole JSON, for SQL: postures.posture_json of a row with a base holds
-- only its difference.
CREATE VIEW posture_documents AS
  SELECT p.id, p.host_id, p.report_id, p.stored_at, p.collected_at, p.posture_hash,
         posture_json_whole(p.posture_json, b.posture_json) AS posture_json
  FROM postures p
  LEFT JOIN postures b ON b.id = p.base_id AND b.stored_at = p.base_stored_at;

-- The history job keeps the base of a host's current posture as it keeps the posture itself
-- (the default partition is trimmed row by row, at a time that is not a day's start).
UPDATE history_tables SET keep_rows =
  'EXISTS (SELECT FROM host_state s WHERE s.host_id = t.host_id AND (s.posture_id = t.id '
  'OR EXISTS (SELECT FROM postures c WHERE c.id = s.posture_id '
  'AND c.stored_at = s.posture_stored_at AND c.base_id = t.id '
  'AND c.base_stored_at = t.stored_at)))'
WHERE table_name = 'postures';
