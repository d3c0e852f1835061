-- People's bearer tokens and revoked certificates. A token's secret is never stored, only its
-- SHA-256 (the collector compares it in constant time). A revocation is never undone; each one
-- is announced on the channel smbfleet_revocations in the transaction that stores it, so that
-- every collector replica refuses the certificate and closes its streams within seconds.
-- A row with only a host (no serial, no fingerprint) revokes the host: every certificate it
-- holds or will hold, and its re-enrollment; at most one such row per host.

CREATE TABLE api_tokens (
  id            text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
  name          text NOT NULL CHECK (btrim(name) <> ''),
  roles         text[] NOT NULL DEFAULT '{}',
  secret_sha256 bytea NOT NULL CHECK (length(secret_sha256) = 32),
  created_by    text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_by    text NOT NULL DEFAULT '',
  revoked_at    timestamptz,
  revoke_reason text NOT NULL DEFAULT '',
  CHECK ((revoked_at IS NULL) = (revoked_by = ''))
);

CREATE TABLE certificate_revocations (
  id          bigserial PRIMARY KEY,
  serial      text NOT NULL DEFAULT '' CHECK (serial ~ '^[0-9a-f]{0,64}$'),
  fingerprint text NOT NULL DEFAULT '' CHECK (fingerprint ~ '^([0-9a-f]{64})?$'),
  host        text NOT NULL DEFAULT '',
  reason      text NOT NULL CHECK (btrim(reason) <> ''),
  revoked_by  text NOT NULL,
  revoked_at  timestamptz NOT NULL DEFAULT now(),
  CHECK (serial <> '' OR fingerprint <> '' OR host <> '')
);
CREATE UNIQUE INDEX certificate_revocations_serial ON certificate_revocations (serial)
  WHERE serial <> '';
CREATE UNIQUE INDEX certificate_revocations_fingerprint ON certificate_revocations (fingerprint)
  WHERE fingerprint <> '';
CREATE UNIQUE INDEX certificate_revocations_host ON certificate_revocations (host)
  WHERE serial = '' AND fingerprint = '';
