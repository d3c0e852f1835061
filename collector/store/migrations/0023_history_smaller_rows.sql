-- Smaller history rows: what a host adds per day (docs/scaling.md "History per host per day").
--
-- * host_events: an event's channel, provider, level and kind come from a small set and were
--   most of its row (the channel 'Microsoft-Windows-SMBServer/Operational' alone is 40 bytes,
--   and again in the unique index). Each combination is now a row of host_event_types, and an
--   event keeps its type's id. The unique key leads with the event's time: it serves a time
--   range (the dashboards' filter) as the index on `at` alone did, which goes.
-- * reports: its primary key (host_id, report_id, received_at) kept nothing once: a resend
--   arrives later and so under another key. report_ids (host_id, report_id) is what keeps a
--   report once, across days, and a report's row is written only after report_ids took its id
--   (collector/store/postgres/host_store.cc). The key goes; (host_id, received_at) stays.
--
-- The view smb_security_events reads the type's columns through a join and shows what it did.

CREATE TABLE host_event_types (
  id       integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel  text NOT NULL,
  provider text NOT NULL,
  level    text NOT NULL,
  kind     text NOT NULL,  -- Event.kind: what it means for policy
  UNIQUE (channel, provider, level, kind)
);
-- No foreign key from host_events: a type is never deleted, and the check would cost every
-- event a lookup.
INSERT INTO host_event_types (channel, provider, level, kind)
  SELECT DISTINCT channel, provider, level, kind FROM host_events ORDER BY 1, 2, 3, 4;

ALTER TABLE host_events ADD COLUMN type_id integer;
UPDATE host_events e SET type_id = t.id
  FROM host_event_types t
  WHERE t.channel = e.channel AND t.provider = e.provider AND t.level = e.level
    AND t.kind = e.kind;
ALTER TABLE host_events ALTER COLUMN type_id SET NOT NULL;

CREATE OR REPLACE VIEW smb_security_events AS
  SELECT e.at, h.name AS host, h.labels, h.platform, e.event_id, t.channel, t.provider, t.kind,
         t.level, e.client_address, e.client_name, e.user_name, e.share_name, e.status,
         CASE
           WHEN e.event_id IN (3000, 3021, 3022, 3023, 31022, 31998, 31999) THEN 'audit'
           WHEN t.kind IN ('server_no_signing', 'server_no_encryption', 'server_capability_audit',
                           'client_capability_audit', 'smb1_access', 'guest_logon') THEN 'audit'
           ELSE 'refusal'
         END AS category,
         CASE
           WHEN e.event_id <> 0 THEN e.event_id::text || ' ' || t.kind
           ELSE t.provider || ' ' || t.kind
         END AS event
  FROM host_events e
  JOIN host_event_types t ON t.id = e.type_id
  JOIN hosts h ON h.id = e.host_id
  WHERE t.kind IN ('smb1_access', 'smb1_rejected', 'client_no_signing', 'client_no_encryption',
                   'client_capability_audit', 'server_no_signing', 'server_no_encryption',
                   'server_capability_audit', 'guest_logon', 'guest_logon_rejected',
                   'unencrypted_rejected', 'bad_signature_rejected', 'negotiate_rejected',
                   'signing_validation_failed', 'negotiate_validation_failed',
                   'unencrypted_received', 'decrypt_failed', 'anonymous_denied',
                   'weak_session_key', 'smb1_server_response')
     OR e.event_id IN (1001, 1003, 1004, 1005, 3000, 3021, 3022, 3023, 31013, 31017, 31022,
                       31998, 31999, 32000);

DROP INDEX host_events_once;
DROP INDEX host_events_at;
ALTER TABLE host_events DROP COLUMN channel, DROP COLUMN provider, DROP COLUMN level,
  DROP COLUMN kind;
-- Fixed-width columns first, the 4-byte type_id after the 8-byte ones: no padding in an entry.
CREATE UNIQUE INDEX host_events_once ON host_events (at, host_id, event_id, type_id, record_id);

-- 0016's trigger function, with the type looked up (and added when new). A type is added only
-- when it is missing: INSERT ... ON CONFLICT uses up an id of the identity even when it
-- inserts nothing. Two reports bringing the same new type at once: the second waits for the
-- first's row and then inserts nothing; the next statement sees that row (read committed).
-- New types are inserted in one order, so that two reports each waiting for a type the other
-- inserted (a deadlock) cannot happen: a fleet's first reports bring the same new types at once.
CREATE OR REPLACE FUNCTION host_events_from_posture() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO host_event_types (channel, provider, level, kind)
  SELECT DISTINCT r.channel, r.provider, r.level, r.kind
  FROM host_events_rows(NEW.posture_json, NULL) r
  WHERE NOT EXISTS (SELECT FROM host_event_types t
                    WHERE t.channel = r.channel AND t.provider = r.provider
                      AND t.level = r.level AND t.kind = r.kind)
  ORDER BY 1, 2, 3, 4
  ON CONFLICT DO NOTHING;
  INSERT INTO host_events (host_id, at, event_id, type_id, record_id, client_address,
                           client_name, user_name, share_name, status, posture_id)
  SELECT NEW.host_id, r.at, r.event_id, t.id, r.record_id, r.client_address, r.client_name,
         r.user_name, r.share_name, r.status, NEW.id
  FROM host_events_rows(NEW.posture_json, COALESCE(NEW.collected_at, NEW.stored_at)) r
  JOIN host_event_types t ON t.channel = r.channel AND t.provider = r.provider
                         AND t.level = r.level AND t.kind = r.kind
  ON CONFLICT DO NOTHING;
  NEW.posture_json := NEW.posture_json - 'sessions' - 'events';
  RETURN NEW;
END
$$;

ALTER TABLE reports DROP CONSTRAINT reports_pkey;
