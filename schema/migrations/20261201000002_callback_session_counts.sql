-- GET /app-callbacks at the scale of the invocation history (10 M sessions, a tenant with 3 M):
-- totals from counts the database keeps; pages read from the filters' indexes (with
-- 20261201000001_callback_sessions_app_status_index.sql, each filter of tenant, app and status
-- has an index holding its columns, the list's order and the id, so a page's ids are read from
-- the index and only its own rows from the table; a run's sessions are few).
--
-- 1. app_callback_session_counts: sessions per tenant, app and status. The list's totals add
--    these up instead of counting up to 100,001 rows (65-250 ms a request for a large tenant,
--    2.4 s cold for an app and a status whose rows are spread over the table).
-- 2. Writers never update a count row. Statement-level triggers append what each statement
--    moved to app_callback_session_count_changes (a row per tenant, app and status whose count
--    it changed), and the pipeline folds the changes into the counts every second
--    (app_callback_session_counts_fold, called by pipeline/src/callback_counts.rs). Were the
--    triggers to add to the counts themselves, the callbacks stage's parallel batches, each
--    settling several tenants' sessions, would lock shared count rows in different orders
--    (deadlocks) and queue on one tenant's rows. A reader adds the counts and the changes in
--    one statement, so a total is exact at that statement's snapshot whether or not a fold has
--    run, and a fold (one statement too) never shows a change twice or not at all.
-- 3. Counts only hold while every write goes through the triggers: after a restore without
--    triggers, or writes with them disabled, app_callback_session_counts_rebuild() counts again.
--
-- Applying it holds writers of app_callback_sessions off while it counts the sessions already
-- written (one index-only pass; a few seconds for 10 M sessions).

CREATE TABLE app_callback_session_counts (
    tenant_id uuid   NOT NULL,
    app_name  text   NOT NULL,
    status    text   NOT NULL,
    sessions  bigint NOT NULL,
    PRIMARY KEY (tenant_id, app_name, status)
);

CREATE TABLE app_callback_session_count_changes (
    tenant_id uuid   NOT NULL,
    app_name  text   NOT NULL,
    status    text   NOT NULL,
    sessions  bigint NOT NULL
);

CREATE INDEX app_callback_session_count_changes_key
    ON app_callback_session_count_changes (tenant_id, app_name, status);

-- Emptied every second: vacuum keeps its pages rather than truncating them, which would take an
-- exclusive lock that stalls the writers' triggers and the readers' totals, and runs often.
ALTER TABLE app_callback_session_count_changes SET (
    vacuum_truncate = off,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000
);

CREATE FUNCTION app_callback_sessions_counted_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_callback_session_count_changes (tenant_id, app_name, status, sessions)
    SELECT tenant_id, app_name, status, count(*) FROM added GROUP BY 1, 2, 3;
    RETURN NULL;
END;
$$;

-- Only what moved: an update that keeps a session's status (its output, say) appends nothing.
CREATE FUNCTION app_callback_sessions_counted_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_callback_session_count_changes (tenant_id, app_name, status, sessions)
    SELECT tenant_id, app_name, status, sum(moved)
    FROM (SELECT tenant_id, app_name, status, 1 AS moved FROM added
          UNION ALL
          SELECT tenant_id, app_name, status, -1 FROM removed) AS changed
    GROUP BY 1, 2, 3
    HAVING sum(moved) <> 0;
    RETURN NULL;
END;
$$;

CREATE FUNCTION app_callback_sessions_counted_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app_callback_session_count_changes (tenant_id, app_name, status, sessions)
    SELECT tenant_id, app_name, status, -count(*) FROM removed GROUP BY 1, 2, 3;
    RETURN NULL;
END;
$$;

-- TRUNCATE names no rows and is for tests and operators: it empties the counts with it.
CREATE FUNCTION app_callback_sessions_counted_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE app_callback_session_counts, app_callback_session_count_changes;
    RETURN NULL;
END;
$$;

CREATE TRIGGER app_callback_sessions_counted_insert
    AFTER INSERT ON app_callback_sessions REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION app_callback_sessions_counted_insert();
CREATE TRIGGER app_callback_sessions_counted_update
    AFTER UPDATE ON app_callback_sessions REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION app_callback_sessions_counted_update();
CREATE TRIGGER app_callback_sessions_counted_delete
    AFTER DELETE ON app_callback_sessions REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION app_callback_sessions_counted_delete();
CREATE TRIGGER app_callback_sessions_counted_truncate
    AFTER TRUNCATE ON app_callback_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION app_callback_sessions_counted_truncate();

-- Folds the changes seen now into the counts and answers how many change rows it folded; the
-- pipeline calls it every second. One statement deletes the changes and adds their sums, so a
-- reader sees each change on one side or the other, never both; changes committed meanwhile
-- wait for the next fold. Two folds at once are safe: the second one's delete waits for the
-- first's rows and finds them gone, and counts are upserted in key order.
CREATE FUNCTION app_callback_session_counts_fold() RETURNS bigint
LANGUAGE sql AS $$
    WITH folded AS (
        DELETE FROM app_callback_session_count_changes
        RETURNING tenant_id, app_name, status, sessions
    ), added AS (
        INSERT INTO app_callback_session_counts AS c (tenant_id, app_name, status, sessions)
        SELECT tenant_id, app_name, status, sum(sessions) FROM folded
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, app_name, status)
            DO UPDATE SET sessions = c.sessions + EXCLUDED.sessions
    )
    SELECT count(*) FROM folded
$$;

-- Counts every session again: of `only_tenant`, or of every tenant when it is NULL. Writers of
-- sessions wait meanwhile (SHARE lock until the caller's transaction ends), so nothing moves
-- between the recount and the counts it replaces; a fold racing it waits for its rows or finds
-- them gone. For operators, after writes that bypassed the triggers; answers the sessions counted.
CREATE FUNCTION app_callback_session_counts_rebuild(only_tenant uuid DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    counted bigint;
BEGIN
    LOCK TABLE app_callback_sessions IN SHARE MODE;
    DELETE FROM app_callback_session_count_changes
    WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    DELETE FROM app_callback_session_counts
    WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    INSERT INTO app_callback_session_counts (tenant_id, app_name, status, sessions)
    SELECT tenant_id, app_name, status, count(*) FROM app_callback_sessions
    WHERE only_tenant IS NULL OR tenant_id = only_tenant
    GROUP BY 1, 2, 3;
    SELECT coalesce(sum(sessions), 0) INTO counted FROM app_callback_session_counts
    WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    RETURN counted;
END;
$$;

-- The sessions already written, counted once (creating the triggers above holds writers off
-- until this migration commits, so none is missed or counted twice).
SELECT app_callback_session_counts_rebuild();
