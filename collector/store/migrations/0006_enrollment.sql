-- Enrollment: tokens an admin hands to new agents (stored as SHA-256 of the secret, never in
-- clear), the certificates the collector's issuing CA made, and the labels policy trusts (set
-- from the collector side: a token's scope or an admin). What an agent says about itself moves
-- to hosts.reported_labels: shown, never trusted.

CREATE TABLE enrollment_tokens (
  id                 text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  secret_sha256      bytea NOT NULL CHECK (length(secret_sha256) = 32),
  labels             jsonb NOT NULL DEFAULT '{}'::jsonb,
  max_uses           integer NOT NULL CHECK (max_uses > 0),
  uses_left          integer NOT NULL CHECK (uses_left >= 0 AND uses_left <= max_uses),
  expires_at         timestamptz NOT NULL,
  comment            text NOT NULL DEFAULT '',
  allow_reenrollment boolean NOT NULL DEFAULT false,
  created_by         text NOT NULL DEFAULT '',
  created_at         timestamptz NOT NULL DEFAULT now(),
  revoked_by         text NOT NULL DEFAULT '',
  revoked_at         timestamptz,
  revoke_reason      text NOT NULL DEFAULT '',
  CHECK ((revoked_at IS NULL) = (revoked_by = ''))
);

CREATE TABLE issued_certificates (
  serial              text PRIMARY KEY CHECK (serial ~ '^[0-9a-f]+$'),
  fingerprint         text NOT NULL UNIQUE CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  host                text NOT NULL CHECK (host = lower(host) AND host <> ''),
  not_before          timestamptz NOT NULL,
  not_after           timestamptz NOT NULL CHECK (not_after > not_before),
  -- the token that enrolled it; NULL for a renewal
  enrollment_token_id text REFERENCES enrollment_tokens(id),
  issued_at           timestamptz NOT NULL DEFAULT now(),
  revoked_at          timestamptz
);
CREATE INDEX issued_certificates_host ON issued_certificates (host, not_after);

CREATE TABLE host_labels (
  host   text NOT NULL CHECK (host = lower(host) AND host <> ''),
  key    text NOT NULL CHECK (key <> ''),
  value  text NOT NULL,
  set_by text NOT NULL,
  set_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (host, key)
);

ALTER TABLE hosts ADD COLUMN reported_labels jsonb NOT NULL DEFAULT '{}'::jsonb;
UPDATE hosts SET reported_labels = labels;
