-- Approver sets an admin published (`smbfleetctl trust publish`): the serialized
-- SignedApproverSet exactly as the offline root signed it, base64. The collector cannot verify
-- the root signature (agents pin the root); it forwards the set with the greatest serial.

CREATE TABLE approver_sets (
  serial        bigint PRIMARY KEY CHECK (serial > 0),
  signed_set    text NOT NULL CHECK (signed_set <> ''),
  root_key_id   text NOT NULL DEFAULT '',
  published_by  text NOT NULL CHECK (btrim(published_by) <> ''),
  published_at  timestamptz NOT NULL DEFAULT now()
);
