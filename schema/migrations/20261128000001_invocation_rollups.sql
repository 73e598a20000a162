-- Invocation history at scale: rollups kept by the database, and no notification per write.
--
-- 1. The per-row pg_notify trigger goes. NOTIFY takes a cluster-wide lock at commit, so every
--    writer of app_invocations queued behind every other (pgbench, 16 writers: 3,130 tps with
--    it, 8,550 without). Read caches now learn of changes from the writers, over Redis, after
--    their commit (readers::invocations::CHANGED_CHANNEL).
-- 2. app_invocation_counts: rows per tenant, app, status and UTC month and day. List totals add
--    these up instead of counting raw rows (readers::invocations::total).
-- 3. app_invocation_minutes: per tenant, app and UTC minute, what GET /apps/health reports
--    (calls, failures, timeouts, a duration histogram for the p95, last call and failure).
--    Kept two days; the pipeline prunes older minutes.
--
-- Both are maintained by statement-level triggers over transition tables: one upsert per
-- statement whatever its row count, in the writer's transaction, so they are exact for every
-- writer (the pipeline, tests, hand-written SQL). Upserts are sorted by key so two writers
-- always lock shared rollup rows in the same order.

DROP TRIGGER app_invocations_changed ON app_invocations;
DROP TRIGGER app_invocations_truncated ON app_invocations;
DROP FUNCTION app_invocations_notify_changed();
DROP FUNCTION app_invocations_notify_truncated();

CREATE TABLE app_invocation_counts (
    tenant_id uuid        NOT NULL,
    span      text        NOT NULL CHECK (span IN ('month', 'day')),
    bucket    timestamptz NOT NULL,
    app_name  text        NOT NULL,
    status    text        NOT NULL,
    calls     bigint      NOT NULL,
    PRIMARY KEY (tenant_id, span, bucket, app_name, status)
);

CREATE TABLE app_invocation_minutes (
    tenant_id       uuid        NOT NULL,
    minute          timestamptz NOT NULL,
    app_name        text        NOT NULL,
    calls           bigint      NOT NULL,
    failures        bigint      NOT NULL, -- status error
    timeouts        bigint      NOT NULL, -- status timeout
    last_call_at    timestamptz,
    last_failure_at timestamptz,          -- newest error or timeout
    -- durations[i] counts calls of at most 2^((i-1)/4) ms (i = 1 also holds 0 ms), the last
    -- slot everything longer: a p95 read from it is within 19 % of the true one.
    durations       bigint[]    NOT NULL,
    PRIMARY KEY (tenant_id, minute, app_name)
);

-- Slots of app_invocation_minutes.durations. The SQL functions are single expressions, so the
-- planner inlines them; the element-wise sum loops in PL/pgSQL, whose plans stay cached.
CREATE FUNCTION app_invocation_duration_slot(duration_ms double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN duration_ms <= 1 THEN 1
                ELSE least(72, 1 + ceil(4 * log(duration_ms) / log(2.0))::integer) END
$$;

-- One histogram with `n` in the slot of `duration_ms`.
CREATE FUNCTION app_invocation_duration_histogram(duration_ms double precision, n bigint)
RETURNS bigint[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_fill(0::bigint, ARRAY[app_invocation_duration_slot(duration_ms) - 1])
           || n
           || array_fill(0::bigint, ARRAY[72 - app_invocation_duration_slot(duration_ms)])
$$;

-- Element-wise sum of two histograms (NULL counts as empty).
CREATE FUNCTION app_invocation_histogram_add(a bigint[], b bigint[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF a IS NULL THEN
        RETURN b;
    END IF;
    FOR i IN 1 .. 72 LOOP
        a[i] := a[i] + b[i];
    END LOOP;
    RETURN a;
END;
$$;

CREATE AGGREGATE app_invocation_histogram_sum(bigint[]) (
    SFUNC = app_invocation_histogram_add,
    STYPE = bigint[]
);

-- Adds `sign` (1 or -1) times each described row to both rollups. The trigger functions below
-- hand their transition tables over as arrays: transition tables are visible only inside the
-- trigger function itself, and this keeps the upserts written once.
CREATE FUNCTION app_invocations_roll_up(
    sign integer, tenants uuid[], apps text[], statuses text[], times timestamptz[],
    durations double precision[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_invocation_counts AS c (tenant_id, span, bucket, app_name, status, calls)
    SELECT tenant_id, span, bucket, app_name, status, sign * count(*)
    FROM unnest(tenants, apps, statuses, times) AS changed(tenant_id, app_name, status, invoked_at)
    CROSS JOIN LATERAL (VALUES ('month', date_trunc('month', invoked_at, 'UTC')),
                               ('day', date_trunc('day', invoked_at, 'UTC'))) AS b(span, bucket)
    GROUP BY tenant_id, span, bucket, app_name, status
    ORDER BY tenant_id, span, bucket, app_name, status
    ON CONFLICT (tenant_id, span, bucket, app_name, status)
        DO UPDATE SET calls = c.calls + EXCLUDED.calls;

    -- Older minutes are pruned; a change to one of them would recreate a row nobody reads.
    INSERT INTO app_invocation_minutes AS m (tenant_id, minute, app_name, calls, failures,
                                             timeouts, last_call_at, last_failure_at, durations)
    SELECT tenant_id, date_trunc('minute', invoked_at, 'UTC') AS minute, app_name,
           sign * count(*),
           sign * count(*) FILTER (WHERE status = 'error'),
           sign * count(*) FILTER (WHERE status = 'timeout'),
           CASE WHEN sign > 0 THEN max(invoked_at) END,
           CASE WHEN sign > 0 THEN max(invoked_at) FILTER (WHERE status IN ('error', 'timeout')) END,
           app_invocation_histogram_sum(app_invocation_duration_histogram(duration_ms, sign))
    FROM unnest(tenants, apps, statuses, times, durations)
        AS changed(tenant_id, app_name, status, invoked_at, duration_ms)
    WHERE invoked_at >= now() - interval '2 days'
    GROUP BY tenant_id, minute, app_name
    ORDER BY tenant_id, minute, app_name
    ON CONFLICT (tenant_id, minute, app_name) DO UPDATE SET
        calls = m.calls + EXCLUDED.calls,
        failures = m.failures + EXCLUDED.failures,
        timeouts = m.timeouts + EXCLUDED.timeouts,
        last_call_at = greatest(m.last_call_at, EXCLUDED.last_call_at),
        last_failure_at = greatest(m.last_failure_at, EXCLUDED.last_failure_at),
        durations = app_invocation_histogram_add(m.durations, EXCLUDED.durations);
END;
$$;

CREATE FUNCTION app_invocations_roll_up_added() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM app_invocations_roll_up(1, array_agg(tenant_id), array_agg(app_name),
                                    array_agg(status), array_agg(invoked_at), array_agg(duration_ms))
    FROM added HAVING count(*) > 0;
    RETURN NULL;
END;
$$;

CREATE FUNCTION app_invocations_roll_up_removed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM app_invocations_roll_up(-1, array_agg(tenant_id), array_agg(app_name),
                                    array_agg(status), array_agg(invoked_at), array_agg(duration_ms))
    FROM removed HAVING count(*) > 0;
    RETURN NULL;
END;
$$;

-- An update is its old rows removed and its new rows added (two triggers, one per side: a
-- trigger naming transition tables has one event).
CREATE TRIGGER app_invocations_rolled_up_insert
    AFTER INSERT ON app_invocations REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_roll_up_added();
CREATE TRIGGER app_invocations_rolled_up_update_old
    AFTER UPDATE ON app_invocations REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_roll_up_removed();
CREATE TRIGGER app_invocations_rolled_up_update_new
    AFTER UPDATE ON app_invocations REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_roll_up_added();
CREATE TRIGGER app_invocations_rolled_up_delete
    AFTER DELETE ON app_invocations REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_roll_up_removed();

-- TRUNCATE names no rows and is for tests and operators: it empties the rollups with it.
CREATE FUNCTION app_invocations_truncate_rollups() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE app_invocation_counts, app_invocation_minutes;
    RETURN NULL;
END;
$$;

CREATE TRIGGER app_invocations_rolled_up_truncate
    AFTER TRUNCATE ON app_invocations
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_truncate_rollups();

-- The history already written, counted once. Its minutes are not: health starts at the upgrade.
INSERT INTO app_invocation_counts (tenant_id, span, bucket, app_name, status, calls)
SELECT tenant_id, span, bucket, app_name, status, count(*)
FROM app_invocations
CROSS JOIN LATERAL (VALUES ('month', date_trunc('month', invoked_at, 'UTC')),
                           ('day', date_trunc('day', invoked_at, 'UTC'))) AS b(span, bucket)
GROUP BY tenant_id, span, bucket, app_name, status;
