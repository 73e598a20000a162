-- Scheduled audit exports (SPEC runbook facts; README "The audit log"): a tenant's schedule
-- writes its audit events to object storage one window at a time. A window is
-- [covered_until, covered_until + interval); a run that fails leaves covered_until where it
-- was, so the next run covers the failed run's window again.

CREATE TABLE audit_export_schedules (
    tenant_id      uuid        PRIMARY KEY,
    enabled        boolean     NOT NULL,
    interval_hours integer     NOT NULL CHECK (interval_hours BETWEEN 1 AND 168),
    format         text        NOT NULL CHECK (format IN ('ndjson', 'csv')),
    -- The end of the last window exported; the next window starts here.
    covered_until  timestamptz NOT NULL,
    updated_by     text        NOT NULL,
    updated_at     timestamptz NOT NULL
);

CREATE TABLE audit_export_runs (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL,
    window_from  timestamptz NOT NULL,
    window_to    timestamptz NOT NULL,
    format       text        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('succeeded', 'failed')),
    rows         bigint      NOT NULL,
    bytes        bigint      NOT NULL,
    object_key   text,
    error        text,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL
);

CREATE INDEX audit_export_runs_tenant_time ON audit_export_runs (tenant_id, started_at DESC, id DESC);
-- The audit log by actor (GET /audit-events?actor=).
CREATE INDEX audit_events_tenant_actor_time ON audit_events (tenant_id, actor_id, occurred_at DESC, id DESC);
