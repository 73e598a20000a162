-- Vendor webhook events (SPEC §4.8, §6.3), recorded by the callbacks stage. The message id is
-- the key, so a redelivered message records nothing twice; the vendor's event id is unique per
-- tenant and app forever, so a repeat of an event (another delivery, another message) never
-- applies twice either.
CREATE TABLE app_callback_events (
    id          uuid        PRIMARY KEY,
    tenant_id   uuid        NOT NULL,
    app_name    text        NOT NULL,
    session_id  uuid        NOT NULL REFERENCES app_callback_sessions (id),
    event_id    text        NOT NULL,
    external_id text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('completed', 'failed', 'pending')),
    -- What recording it did: settled the session, kept it pending, or found it settled.
    outcome     text        NOT NULL CHECK (outcome IN ('settled', 'accepted', 'stale')),
    output      jsonb,
    error       text,
    received_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT app_callback_events_once UNIQUE (tenant_id, app_name, event_id)
);

CREATE INDEX app_callback_events_session ON app_callback_events (tenant_id, session_id);

-- The webhook routes find a session by the vendor's id before they know the tenant (the
-- platform route serves every tenant), so this one index starts with the app, not the tenant.
CREATE INDEX app_callback_sessions_external ON app_callback_sessions (app_name, external_id, created_at DESC);

-- GET /app-callbacks: newest first within each filter.
CREATE INDEX app_callback_sessions_tenant_run ON app_callback_sessions (tenant_id, workflow_run_id, created_at DESC, id DESC);
CREATE INDEX app_callback_sessions_tenant_app ON app_callback_sessions (tenant_id, app_name, created_at DESC, id DESC);
CREATE INDEX app_callback_sessions_tenant_status ON app_callback_sessions (tenant_id, status, created_at DESC, id DESC);

-- A session settled by an event (or failed by a forced uninstall) resumes its run at once
-- through a timer due now: written in the settling transaction, relayed like any timer.
ALTER TABLE run_timers DROP CONSTRAINT run_timers_purpose_check;
ALTER TABLE run_timers ADD CONSTRAINT run_timers_purpose_check
    CHECK (purpose IN ('retry', 'callback_timeout', 'callback'));
