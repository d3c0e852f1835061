-- Counters around a change (ChangeHost counters_before, counters_after, measured): the host's
-- load in the window before the apply (from the ack) and after it (from a later report), each a
-- serialised CounterWindow with the summary the collector computed, and the measured effect
-- beside the prediction. Written apart from the workflow's steps (ChangeStore::UpdateHostCounters),
-- which neither read nor rewrite them.
ALTER TABLE change_hosts
  ADD COLUMN counters_before bytea,
  ADD COLUMN counters_after  bytea,
  ADD COLUMN measured        jsonb;  -- MeasuredImpact, protobuf's JSON mapping
