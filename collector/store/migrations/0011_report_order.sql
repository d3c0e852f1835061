-- A report id is chosen by the agent: unique per host, not across hosts. Another host reusing
-- an id is stored; the same host sending it again (a resend, two connections at once) is stored
-- once, by this key and INSERT ... ON CONFLICT DO NOTHING.
ALTER TABLE reports DROP CONSTRAINT reports_pkey;
ALTER TABLE reports ADD PRIMARY KEY (host_id, report_id);

-- When the newest report applied to the host's current state was collected. A report collected
-- earlier that arrives late is kept in history (reports, postures) but does not replace the
-- current state (host_state, sessions, shares, host columns) or its evaluation.
ALTER TABLE hosts ADD COLUMN last_collected_at timestamptz;
UPDATE hosts h SET last_collected_at = p.collected_at
  FROM host_state st JOIN postures p ON p.id = st.posture_id
  WHERE st.host_id = h.id;
