-- Change management: changes and their hosts and approvals, desired vs applied per host, the
-- append-only audit log, and the request / approve / revoke workflow of waivers.
--
-- States are the short names of smbfleet.v1.ChangeState / HostChangeState / ChangeSource /
-- WaiverState ('ROLLING_OUT', 'DISPATCHED', ...). Plans, impact and ack values are kept as
-- protobuf's JSON mapping (jsonb), as postures are: people and dashboards read them with SQL,
-- and a field added to a message is stored without a new migration. `more` holds the fields of
-- a message that have no column of their own. NULL stands for an unset message or time.

CREATE TABLE changes (
  id                 text PRIMARY KEY CHECK (btrim(id) <> ''),
  seq                bigserial NOT NULL UNIQUE,  -- creation order: "newest first", "oldest first"
  state              text NOT NULL CHECK (state IN ('PROPOSED', 'APPROVED', 'ROLLING_OUT',
                       'HALTED', 'COMPLETED', 'REJECTED', 'ROLLED_BACK', 'EXPIRED')),
  version            bigint NOT NULL DEFAULT 0,
  source             text NOT NULL DEFAULT '',
  rule_id            text NOT NULL DEFAULT '',
  label_selector     jsonb NOT NULL DEFAULT '{}'::jsonb,
  reason             text NOT NULL DEFAULT '',
  proposed_by        text NOT NULL CHECK (btrim(proposed_by) <> ''),
  proposed_at        timestamptz,
  updated_at         timestamptz,
  not_after          timestamptz,
  content_hash       text NOT NULL DEFAULT '',
  approvals_required integer NOT NULL DEFAULT 0,
  rejected_by        text NOT NULL DEFAULT '',
  rollout            jsonb,  -- RolloutOptions as approved
  current_wave       integer NOT NULL DEFAULT 0,
  wave_count         integer NOT NULL DEFAULT 0,
  halt_reason        text NOT NULL DEFAULT '',
  impact             jsonb,  -- ChangeImpactSummary
  rollback_of        text REFERENCES changes (id),
  rolled_back_by     text REFERENCES changes (id),
  policy_name        text NOT NULL DEFAULT '',
  policy_version     text NOT NULL DEFAULT '',
  more               jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- the target of change_approvals' four-eyes foreign key
  UNIQUE (id, proposed_by)
);
-- The scheduler's work list (LiveChangeIds) and `changes list --state`.
CREATE INDEX changes_state ON changes (state, seq);

CREATE TABLE change_hosts (
  change_id       text NOT NULL REFERENCES changes (id),
  host            text NOT NULL CHECK (btrim(host) <> ''),
  position        integer NOT NULL,  -- the host's place in Change.hosts
  state           text NOT NULL CHECK (state IN ('PENDING', 'DISPATCHED', 'APPLIED', 'FAILED',
                    'PRECONDITION_FAILED', 'REFUSED', 'ROLLED_BACK', 'TIMED_OUT')),
  wave            integer NOT NULL DEFAULT -1,
  dispatched_at   timestamptz,
  finished_at     timestamptz,
  message         text NOT NULL DEFAULT '',
  order_not_after timestamptz,
  nonce           text NOT NULL DEFAULT '',
  rollback_sent   boolean NOT NULL DEFAULT false,
  steps           jsonb NOT NULL DEFAULT '[]'::jsonb,  -- PlanStep[]: before -> after
  impact          jsonb,                               -- Impact: clients it would refuse
  before_values   jsonb NOT NULL DEFAULT '[]'::jsonb,  -- SettingChange[] from the ack
  after_values    jsonb NOT NULL DEFAULT '[]'::jsonb,  -- SettingChange[] from the ack
  more            jsonb NOT NULL DEFAULT '{}'::jsonb,  -- rule ids, labels, not remediable
  PRIMARY KEY (change_id, host)
);
-- An agent that (re)connects asks for its orders (PendingForHost): one index lookup, however
-- many changes there are.
CREATE INDEX change_hosts_host_state ON change_hosts (host, state);

-- Four eyes in the schema: each approval row carries its change's proposer (kept equal by the
-- composite foreign key) and may not name it as approver.
CREATE TABLE change_approvals (
  change_id   text NOT NULL,
  proposed_by text NOT NULL,
  approver    text NOT NULL CHECK (btrim(approver) <> ''),
  position    integer NOT NULL,  -- the order in which approvals were given
  at          timestamptz,
  comment     text NOT NULL DEFAULT '',
  PRIMARY KEY (change_id, approver),
  FOREIGN KEY (change_id, proposed_by) REFERENCES changes (id, proposed_by) ON UPDATE CASCADE,
  CONSTRAINT change_approvals_four_eyes CHECK (approver <> proposed_by)
);

-- Per host: the change it should be at and the one it last applied, and the last ack (as xDS
-- keeps ACK/NACK). Written by the same transaction as the host's change row.
CREATE TABLE host_change_status (
  host              text PRIMARY KEY,
  desired_change_id text NOT NULL DEFAULT '',
  desired_version   bigint NOT NULL DEFAULT 0,
  applied_change_id text NOT NULL DEFAULT '',
  applied_version   bigint NOT NULL DEFAULT 0,
  last_result       text NOT NULL DEFAULT '',
  last_error        text NOT NULL DEFAULT '',
  last_ack_at       timestamptz
);

-- Every transition of a change or waiver: who, when, why, and the content hash it applied to.
CREATE TABLE audit_log (
  seq          bigserial PRIMARY KEY,
  at           timestamptz NOT NULL DEFAULT now(),
  actor        text NOT NULL CHECK (btrim(actor) <> ''),
  action       text NOT NULL CHECK (btrim(action) <> ''),
  change_id    text NOT NULL DEFAULT '',
  host         text NOT NULL DEFAULT '',
  waiver_id    text NOT NULL DEFAULT '',
  reason       text NOT NULL DEFAULT '',
  content_hash text NOT NULL DEFAULT '',
  detail       text NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_change ON audit_log (change_id, seq) WHERE change_id <> '';
CREATE INDEX audit_log_waiver ON audit_log (waiver_id, seq) WHERE waiver_id <> '';

-- Append-only. The role that runs migrations owns the table and could grant itself the rights
-- back, so a trigger refuses as well; a production install runs migrations as a separate owner
-- role (docs/collector.md).
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM CURRENT_USER;

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update_delete BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- Waivers: requested by one person, approved by another, revoked. Rows from before this
-- migration were approved when they were written and stay APPROVED (or REVOKED if they were).
ALTER TABLE waivers
  ADD COLUMN state         text NOT NULL DEFAULT 'APPROVED'
                           CHECK (state IN ('REQUESTED', 'APPROVED', 'REVOKED')),
  ADD COLUMN ticket        text NOT NULL DEFAULT '',
  ADD COLUMN approved_at   timestamptz,
  ADD COLUMN revoked_by    text NOT NULL DEFAULT '',
  ADD COLUMN revoke_reason text NOT NULL DEFAULT '';
UPDATE waivers SET state = 'REVOKED' WHERE revoked_at IS NOT NULL;
-- A request has no approver yet.
ALTER TABLE waivers ALTER COLUMN approved_by DROP NOT NULL;
ALTER TABLE waivers DROP CONSTRAINT waivers_check5;
ALTER TABLE waivers
  ADD CONSTRAINT waivers_four_eyes
    CHECK (approved_by IS NULL OR created_by = '' OR approved_by <> created_by),
  ADD CONSTRAINT waivers_approved_has_approver
    CHECK (state <> 'APPROVED' OR approved_by IS NOT NULL),
  ADD CONSTRAINT waivers_requested_has_no_approver
    CHECK (state <> 'REQUESTED' OR approved_by IS NULL),
  ADD CONSTRAINT waivers_revoked_when
    CHECK ((state = 'REVOKED') = (revoked_at IS NOT NULL));

-- Only approved waivers apply (the new columns are appended to the view).
CREATE OR REPLACE VIEW waivers_active AS
  SELECT * FROM waivers
  WHERE state = 'APPROVED' AND revoked_at IS NULL AND expires_at > now() AND created_at <= now();
