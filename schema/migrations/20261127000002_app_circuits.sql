-- App circuits (SPEC §3.7), one row per tenant and app that ever failed: written by the
-- circuits stage (the single writer of its state), except the half-open trial, which the
-- call that takes it claims with a compare-and-set on the state so one call across every
-- pipeline goes out. Shared by every worker and kept across restarts: stronger than SPEC's
-- per-process circuits (README "Circuits").
CREATE TABLE app_circuits (
    tenant_id        uuid        NOT NULL,
    app_name         text        NOT NULL,
    state            text        NOT NULL CHECK (state IN ('closed', 'open', 'half_open')),
    -- Counted failures in a row.
    failures         integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    opened_at        timestamptz,
    trial_started_at timestamptz,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, app_name)
);
CREATE INDEX app_circuits_not_closed ON app_circuits (tenant_id) WHERE state <> 'closed';
