-- Cases, as far as the activity feed needs them (SPEC names `POST /cases/:id/decide`,
-- `case.decided` and `case.sla.breached`; README "Cases"): a case is opened by a workflow's
-- `open_case` step or by `POST /cases`, with a type, a priority and an SLA deadline, and is
-- decided once with an outcome. Written by the cases stage (`cases.commands`, keyed by case);
-- a workflow step inserts the case it opens in the run's own transaction (a new id nobody else
-- writes yet), once per run and step.

CREATE TABLE cases (
    id              uuid        PRIMARY KEY,
    tenant_id       uuid        NOT NULL,
    type            text        NOT NULL,
    title           text        NOT NULL,
    subject_id      uuid,
    priority        text        NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'critical')),
    status          text        NOT NULL CHECK (status IN ('open', 'decided')),
    sla_due_at      timestamptz NOT NULL,
    sla_breached_at timestamptz,
    outcome         text CHECK (outcome IN ('approved', 'rejected', 'no_action')),
    decision_comment text,
    opened_by       text        NOT NULL,
    opened_by_name  text        NOT NULL,
    opened_at       timestamptz NOT NULL,
    decided_by      text,
    decided_by_name text,
    decided_at      timestamptz,
    workflow_run_id uuid,
    step_id         text,
    CHECK ((status = 'decided') = (outcome IS NOT NULL)),
    UNIQUE (workflow_run_id, step_id)
);

CREATE INDEX cases_tenant_time ON cases (tenant_id, opened_at DESC, id DESC);
-- svc.case.open counts open cases per tenant, priority and SLA state.
CREATE INDEX cases_open ON cases (tenant_id, priority) WHERE status = 'open';

-- An open case's SLA deadline: relayed as a `breach_sla` command when due (like run_timers),
-- deleted when the case is decided first.
CREATE TABLE case_timers (
    case_id   uuid        PRIMARY KEY REFERENCES cases (id),
    tenant_id uuid        NOT NULL,
    due_at    timestamptz NOT NULL
);

CREATE INDEX case_timers_due ON case_timers (due_at);

-- GET /activity reads the newest events of a few actions; GET /audit-events filters by action.
CREATE INDEX audit_events_tenant_action_time ON audit_events (tenant_id, action, occurred_at DESC, id DESC);
