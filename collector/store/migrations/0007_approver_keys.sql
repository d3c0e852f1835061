-- Approvals agents can verify: approvers' Ed25519 public keys (registered by an admin; the
-- private keys never reach the collector), each approval's signature and the key that made it,
-- and the per-change nonce the signed payload carries.

CREATE TABLE approver_keys (
  key_id        text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
  name          text NOT NULL CHECK (btrim(name) <> ''),
  public_key    bytea NOT NULL CHECK (length(public_key) = 32),
  added_by      text NOT NULL DEFAULT '',
  added_at      timestamptz NOT NULL DEFAULT now(),
  revoked_by    text NOT NULL DEFAULT '',
  revoked_at    timestamptz,
  revoke_reason text NOT NULL DEFAULT '',
  -- a revoked key is revoked by someone
  CHECK ((revoked_at IS NULL) = (revoked_by = ''))
);
CREATE INDEX approver_keys_name ON approver_keys (name, added_at);

-- Approvals from before this migration were given without a signature and keep none.
ALTER TABLE change_approvals
  ADD COLUMN key_id    text NOT NULL DEFAULT '',
  ADD COLUMN signature bytea NOT NULL DEFAULT ''::bytea;

ALTER TABLE changes
  ADD COLUMN approval_nonce text NOT NULL DEFAULT '',
  ADD COLUMN requested_by   text NOT NULL DEFAULT '';
