-- A workflow step scoped to some hosts of a change (ChangeStore::UpdateChangeHosts: agents' acks)
-- counts the change's other hosts instead of reading them: whether a host of the current wave
-- still waits (PENDING, DISPATCHED), how many failed a precondition, and the earliest dispatch of
-- a host still waiting for its ack. Each is a range of one of these indexes, so an ack's step
-- does not grow with the change's hosts.
CREATE INDEX change_hosts_progress ON change_hosts (change_id, state, wave);
CREATE INDEX change_hosts_dispatched ON change_hosts (change_id, state, dispatched_at);
