-- Rule-set evaluations (issue 29; README "Rule evaluations and backtests"): one row per rule_set
-- step a run finished, written by the runs stage in the transaction that moves the run past the
-- step, so a step is recorded once however often its command is redelivered. A backtest replays
-- these rows: `data` is what the rules saw (the run's context at the step), `rules` what each
-- rule answered then.
CREATE TABLE rule_evaluations (
    id               uuid        PRIMARY KEY,
    tenant_id        uuid        NOT NULL,
    subject_id       uuid,
    run_id           uuid        NOT NULL,
    workflow_key     text        NOT NULL,
    workflow_version integer     NOT NULL CHECK (workflow_version > 0),
    step_id          text        NOT NULL,
    -- The published rule set the step named, and the version it ran; NULL for inline rules.
    rule_set_key     text,
    rule_set_version integer     CHECK (rule_set_version > 0),
    -- No rule set of this platform has bands yet: NULL until one does.
    band             text,
    decision         text        NOT NULL CHECK (decision IN ('pass', 'fail', 'error')),
    -- [{id, key?, version?, type, outcome}], in the set's order; `key` and `version` name a
    -- published rule the entry named.
    rules            jsonb       NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
    -- The keys of the published rules among `rules`: which evaluations a rule's backtest
    -- replays.
    rule_keys        text[]      NOT NULL DEFAULT '{}',
    data             jsonb       NOT NULL,
    duration_ms      real        NOT NULL CHECK (duration_ms >= 0),
    evaluated_at     timestamptz NOT NULL,
    UNIQUE (run_id, step_id)
);

-- A rule set's backtest: its evaluations of the last days, newest first.
CREATE INDEX rule_evaluations_rule_set_time
    ON rule_evaluations (tenant_id, rule_set_key, evaluated_at DESC, id DESC)
    WHERE rule_set_key IS NOT NULL;
-- A workflow's backtest: its runs' evaluations, newest first.
CREATE INDEX rule_evaluations_workflow_time
    ON rule_evaluations (tenant_id, workflow_key, evaluated_at DESC, id DESC);
-- A rule's backtest: the tenant's evaluations newest first, those naming the rule kept (a rule
-- is named by a few rule sets, which run in most of a tenant's runs; a rarely named rule reads
-- further back for its sample).
CREATE INDEX rule_evaluations_tenant_time ON rule_evaluations (tenant_id, evaluated_at DESC, id DESC);
