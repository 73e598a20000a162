-- A workflow's `open_case` step (README "Cases") is a step type of its own.
ALTER TABLE workflow_run_steps DROP CONSTRAINT workflow_run_steps_type_check;
ALTER TABLE workflow_run_steps ADD CONSTRAINT workflow_run_steps_type_check
    CHECK (type IN ('call_app', 'rule_set', 'open_case'));
