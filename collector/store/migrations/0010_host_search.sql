-- The console's host search (ListHosts filters) and overview: stale hosts by last_seen, and hosts
-- by a trusted label value. Paging stays on hosts.name (its unique index), the name and OS
-- substring filters scan in that order.
CREATE INDEX hosts_last_seen ON hosts (last_seen);
CREATE INDEX host_labels_key_value ON host_labels (key, value, host);
