-- The cost model against what changes measured (issue 20): ListMeasuredChangeHosts reads the
-- change hosts with a measured impact, newest acked first, since a time.
CREATE INDEX change_hosts_measured_finished ON change_hosts (finished_at DESC)
  WHERE measured IS NOT NULL;

-- Saved calibrations (ChangeStore::SaveCostModelCalibration): the groups computed then, and the
-- change hosts they came from with the predicted and measured figures, so that a factor applied
-- to later proposals can be traced to its evidence. The newest one's factors correct the CPU
-- predictions of new proposals (docs/cost-model.md "Calibration").
CREATE TABLE cost_model_calibrations (
  id          bigserial PRIMARY KEY,
  saved_at    timestamptz NOT NULL DEFAULT now(),
  saved_by    text NOT NULL CHECK (btrim(saved_by) <> ''),
  since       timestamptz NOT NULL,
  truncated   boolean NOT NULL DEFAULT false,
  input_count integer NOT NULL CHECK (input_count >= 0),
  groups      jsonb NOT NULL  -- {"groups": [CostModelCalibrationGroup, ...]}, protobuf JSON
);

CREATE TABLE cost_model_calibration_inputs (
  calibration_id    bigint NOT NULL REFERENCES cost_model_calibrations (id),
  change_id         text NOT NULL,
  host              text NOT NULL,
  platform          text NOT NULL,
  protection_before text NOT NULL DEFAULT '',
  protection_after  text NOT NULL DEFAULT '',
  measured          jsonb NOT NULL,  -- MeasuredImpact: the predicted and measured figures
  PRIMARY KEY (calibration_id, change_id, host)
);
