-- Workflow runs (README "Definitions and runs"; SPEC §3.6 names their states), written only by
-- the runs stage: a run's commands are keyed by its id, so each run has one writer. The run
-- pins the workflow version it started on (checked by the stage: versions are never deleted);
-- its context grows by each step's output.
CREATE TABLE workflow_runs (
    id                 uuid        PRIMARY KEY,
    tenant_id          uuid        NOT NULL,
    definition_key     text        NOT NULL,
    definition_version integer     NOT NULL CHECK (definition_version > 0),
    subject_id         uuid,
    status             text        NOT NULL
        CHECK (status IN ('running', 'waiting_callback', 'completed', 'failed', 'cancelled')),
    context            jsonb       NOT NULL CHECK (jsonb_typeof(context) = 'object'),
    -- The index of the step the run is at (= the number of steps done).
    position           integer     NOT NULL DEFAULT 0 CHECK (position >= 0),
    error              text,
    created_by         text        NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    finished_at        timestamptz
);
CREATE INDEX workflow_runs_tenant_time ON workflow_runs (tenant_id, created_at DESC, id DESC);
-- The active-runs gauge (svc.workflow.run.active) counts these.
CREATE INDEX workflow_runs_active ON workflow_runs (tenant_id, status)
    WHERE status IN ('running', 'waiting_callback');

-- One row per step a run reached: what GET /workflow-runs/:id shows of it.
CREATE TABLE workflow_run_steps (
    run_id      uuid        NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    step_id     text        NOT NULL,
    position    integer     NOT NULL CHECK (position >= 0),
    type        text        NOT NULL CHECK (type IN ('call_app', 'rule_set')),
    status      text        NOT NULL
        CHECK (status IN ('running', 'waiting_callback', 'completed', 'failed', 'cancelled')),
    output      jsonb,
    error       text,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    PRIMARY KEY (run_id, step_id)
);

-- The state of each app call of a run: a call_app step's call (call_key = the step id) or an
-- app rule's (call_key = '<step id>/rules/<index>'). Attempts are counted at two levels (SPEC §8):
-- step attempts (call_app only: default 3, 2 s apart and doubling, within the step's deadline)
-- and, inside each, the action's attempts (its retry policy). The action attempt counter is also
-- what records an attempt once: the attempt's invocation row and the counter's move commit
-- together, conditional on the counter the attempt started from.
CREATE TABLE workflow_run_calls (
    run_id          uuid        NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    call_key        text        NOT NULL,
    step_id         text        NOT NULL,
    app_name        text        NOT NULL,
    action          text        NOT NULL,
    status          text        NOT NULL
        CHECK (status IN ('running', 'pending', 'succeeded', 'failed', 'cancelled')),
    step_attempt    integer     NOT NULL DEFAULT 1 CHECK (step_attempt > 0),
    -- Action attempts made within the current step attempt.
    action_attempts integer     NOT NULL DEFAULT 0 CHECK (action_attempts >= 0),
    -- Attempts that reached the install (invocation records), over all step attempts.
    invocations     integer     NOT NULL DEFAULT 0 CHECK (invocations >= 0),
    -- The step's deadline (two minutes from its start); while pending, the callback's.
    deadline_at     timestamptz NOT NULL,
    -- A retry waits until then (a run timer resumes the run).
    next_attempt_at timestamptz,
    -- The callback session a pending call waits on.
    session_id      uuid,
    output          jsonb,
    error           text,
    PRIMARY KEY (run_id, call_key)
);

-- Durable timers (ARCHITECTURE "Write path"): the timer relay turns a due row into a Resume
-- command on runs.commands and then deletes it, so a timer survives restarts and fires at least
-- once; what a Resume does is decided from the run's stored state, so a second one is harmless.
CREATE TABLE run_timers (
    id        uuid        PRIMARY KEY,
    tenant_id uuid        NOT NULL,
    run_id    uuid        NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    due_at    timestamptz NOT NULL,
    purpose   text        NOT NULL CHECK (purpose IN ('retry', 'callback_timeout'))
);
CREATE INDEX run_timers_due ON run_timers (due_at);
CREATE INDEX run_timers_run ON run_timers (run_id);
