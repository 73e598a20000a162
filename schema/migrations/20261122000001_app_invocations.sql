-- Invocation history: one row per attempt that reached an install (SPEC 2.4).
-- Big and append-mostly, so it is partitioned by month on invoked_at, and every index starts
-- with tenant_id because every query is scoped to one tenant.
CREATE TABLE app_invocations (
    id                   uuid             NOT NULL,
    tenant_id            uuid             NOT NULL,
    app_name             text             NOT NULL,
    version_id           uuid             NOT NULL,
    action               text             NOT NULL,
    subject_id           uuid,
    workflow_run_id      uuid,
    input                jsonb            NOT NULL,
    output               jsonb,
    status               text             NOT NULL
        CHECK (status IN ('success', 'error', 'timeout', 'pending')),
    error                text,
    duration_ms          double precision NOT NULL CHECK (duration_ms >= 0),
    invoked_at           timestamptz      NOT NULL,
    idempotency_key      text,
    attempt              integer          NOT NULL DEFAULT 1 CHECK (attempt > 0),
    usage_http_requests  integer CHECK (usage_http_requests >= 0),
    usage_document_reads integer CHECK (usage_document_reads >= 0),
    usage_log_lines      integer CHECK (usage_log_lines >= 0),
    -- usage is all three counters or none
    CHECK ((usage_http_requests IS NULL) = (usage_document_reads IS NULL)
       AND (usage_http_requests IS NULL) = (usage_log_lines IS NULL)),
    PRIMARY KEY (tenant_id, invoked_at, id)
) PARTITION BY RANGE (invoked_at);

-- Newest first for a tenant, the default order of GET /app-invocations.
CREATE INDEX app_invocations_tenant_time ON app_invocations (tenant_id, invoked_at DESC, id DESC);
CREATE INDEX app_invocations_tenant_id ON app_invocations (tenant_id, id);
CREATE INDEX app_invocations_tenant_run ON app_invocations (tenant_id, workflow_run_id, invoked_at DESC)
    WHERE workflow_run_id IS NOT NULL;
CREATE INDEX app_invocations_tenant_app ON app_invocations (tenant_id, app_name, invoked_at DESC);
CREATE INDEX app_invocations_tenant_status ON app_invocations (tenant_id, status, invoked_at DESC);

-- Rows outside every monthly partition land here rather than fail; the pipeline keeps monthly
-- partitions created ahead of time so this stays empty.
CREATE TABLE app_invocations_default PARTITION OF app_invocations DEFAULT;

-- Creates the monthly partitions covering [first month of from_day, + months). Idempotent.
CREATE FUNCTION app_invocations_ensure_partitions(from_day date, months integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    month_start date := date_trunc('month', from_day)::date;
    month_end   date;
    part_name   text;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        month_end := (month_start + interval '1 month')::date;
        part_name := format('app_invocations_y%sm%s',
                            to_char(month_start, 'YYYY'), to_char(month_start, 'MM'));
        IF to_regclass(part_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF app_invocations FOR VALUES FROM (%L) TO (%L)',
                part_name, month_start, month_end);
        END IF;
        month_start := month_end;
    END LOOP;
END;
$$;

SELECT app_invocations_ensure_partitions((now() - interval '1 month')::date, 5);
