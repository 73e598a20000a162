-- The apps lifecycle (SPEC §2.8-§2.10, §3.1, §3.4b): versions and their approval requests, the
-- tenants' approval settings, installs and their sealed secrets, callback sessions (the
-- uninstall route counts and fails the pending ones), and the audit trail every stage writes in
-- the transaction of its effect. Every row a tenant owns starts with tenant_id; a platform
-- version (published from the release's catalogue) has none.

-- Commands about platform versions belong to no tenant.
ALTER TABLE inbox ALTER COLUMN tenant_id DROP NOT NULL;

-- One module per publisher, name and version. tenant_id NULL: a platform version.
CREATE TABLE app_versions (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid,
    name         text        NOT NULL,
    version      text        NOT NULL,
    sha256       text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes   integer     NOT NULL CHECK (size_bytes > 0),
    -- The manifest as the module answered it; readers unfold its defaults.
    manifest     jsonb       NOT NULL,
    status       text        NOT NULL CHECK (status IN ('uploaded', 'published', 'withdrawn')),
    uploaded_by  text        NOT NULL,
    uploaded_at  timestamptz NOT NULL,
    published_at timestamptz,
    withdrawn_at timestamptz,
    UNIQUE NULLS NOT DISTINCT (tenant_id, name, version)
);

CREATE INDEX app_versions_publisher_name ON app_versions (tenant_id, name);
-- The internal module route asks whether a hash is published or installed.
CREATE INDEX app_versions_sha256 ON app_versions (sha256);

-- Publish requests of a tenant's own versions. Open: no decision yet; at most one per version.
CREATE TABLE app_approval_requests (
    id                uuid        PRIMARY KEY,
    tenant_id         uuid        NOT NULL,
    version_id        uuid        NOT NULL REFERENCES app_versions (id),
    app_name          text        NOT NULL,
    requested_by      text        NOT NULL,
    requested_by_name text        NOT NULL,
    requested_at      timestamptz NOT NULL,
    comment           text,
    decided_by        text,
    decided_by_name   text,
    decided_at        timestamptz,
    decision          text CHECK (decision IN ('approved', 'rejected', 'withdrawn')),
    decision_comment  text,
    CHECK ((decision IS NULL) = (decided_at IS NULL))
);

CREATE UNIQUE INDEX app_approval_requests_one_open ON app_approval_requests (version_id)
    WHERE decision IS NULL;
CREATE INDEX app_approval_requests_open ON app_approval_requests (tenant_id, requested_at, id)
    WHERE decision IS NULL;
CREATE INDEX app_approval_requests_decided ON app_approval_requests (tenant_id, decided_at DESC, id)
    WHERE decision IS NOT NULL;

-- A tenant's approval settings. No row: nothing needs approval, four-eyes on.
CREATE TABLE approval_settings (
    tenant_id    uuid        PRIMARY KEY,
    required     boolean     NOT NULL,
    -- NULL: every kind needs approval when required; else the kinds that do.
    required_for text[] CHECK (required_for <@ ARRAY['workflow', 'rule', 'rule_set',
                                                     'collection_flow', 'app']),
    four_eyes    boolean     NOT NULL,
    updated_by   text        NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- One install per tenant and app.
CREATE TABLE app_installs (
    tenant_id      uuid        NOT NULL,
    app_name       text        NOT NULL,
    version_id     uuid        NOT NULL REFERENCES app_versions (id),
    enabled        boolean     NOT NULL,
    config         jsonb       NOT NULL,
    approved_hosts text[]      NOT NULL,
    installed_by   text        NOT NULL,
    installed_at   timestamptz NOT NULL,
    updated_by     text        NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, app_name)
);

CREATE INDEX app_installs_version ON app_installs (version_id);

-- Secret values, sealed by the API (AES-256-GCM, associated data binding tenant, app and name)
-- before they travel; never stored or sent in plaintext. key_id names the SECRET_STORE_KEY
-- that sealed it, so the key can rotate.
CREATE TABLE app_secrets (
    tenant_id  uuid        NOT NULL,
    app_name   text        NOT NULL,
    name       text        NOT NULL,
    key_id     text        NOT NULL,
    nonce      bytea       NOT NULL CHECK (length(nonce) = 12),
    ciphertext bytea       NOT NULL,
    stored_by  text        NOT NULL,
    stored_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, app_name, name)
);

-- Asynchronous calls waiting for a vendor webhook (SPEC §2.3, §3.2).
CREATE TABLE app_callback_sessions (
    id              uuid        PRIMARY KEY,
    tenant_id       uuid        NOT NULL,
    app_name        text        NOT NULL,
    version_id      uuid        NOT NULL,
    action          text        NOT NULL,
    external_id     text        NOT NULL,
    workflow_run_id uuid,
    step_id         text,
    status          text        NOT NULL
        CHECK (status IN ('pending', 'completed', 'failed', 'timed_out')),
    output          jsonb,
    error           text,
    created_at      timestamptz NOT NULL,
    completed_at    timestamptz
);

CREATE INDEX app_callback_sessions_tenant_time ON app_callback_sessions (tenant_id, created_at DESC, id DESC);
CREATE INDEX app_callback_sessions_pending ON app_callback_sessions (tenant_id, app_name)
    WHERE status = 'pending';

-- Recorded actions (SPEC §6.1), written in the transaction of the effect they record.
CREATE TABLE audit_events (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid,
    action       text        NOT NULL,
    actor_type   text        NOT NULL CHECK (actor_type IN ('human', 'machine', 'applicant', 'system')),
    actor_id     text        NOT NULL,
    actor_name   text        NOT NULL,
    subject_type text        NOT NULL,
    subject_id   text        NOT NULL,
    payload      jsonb       NOT NULL,
    request_id   text,
    command_id   uuid,
    occurred_at  timestamptz NOT NULL
);

CREATE INDEX audit_events_tenant_time ON audit_events (tenant_id, occurred_at DESC, id DESC);
CREATE INDEX audit_events_command ON audit_events (command_id);
