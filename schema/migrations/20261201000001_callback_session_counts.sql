-- GET /app-callbacks at the scale of the invocation history (10 M sessions, a tenant with 3 M):
-- totals from counts the database keeps, and a page narrowed by app and status read in order.
--
-- 1. app_callback_session_counts: sessions per tenant, app and status. The list's totals add
--    these up instead of counting up to 100,001 rows (65-100 ms a request for a large tenant,
--    2.4 s for an app and a status whose rows are spread over the table).
-- 2. Writers never update a count row. Statement-level triggers append what each statement
--    moved to app_callback_session_count_changes (one row per tenant, app and status it
--    changed), and the pipeline folds the changes into the counts every second
--    (app_callback_session_counts_fold, called by pipeline/src/callback_counts.rs). Were the triggers to add to the counts themselves, the
--    callbacks stage's parallel batches, each settling several tenants' sessions, would lock
--    shared count rows in different orders (deadlocks) and queue on one tenant's rows. A
--    reader adds the counts and the changes in one statement, so a total is exact whether or
--    not a fold has run, and a fold (one statement too) never shows a change twice or not at all.
-- 3. app_callback_sessions_tenant_app_status: a page narrowed by app and status reads its
--    entries in order; with the other four indexes every filter of the list has one whose
--    columns hold the page's ids, so a page is found in the index and only its rows are read.

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

CREATE INDEX app_callback_sessions_tenant_app_status
    ON app_callback_sessions (tenant_id, app_name, status, created_at DESC, id DESC);

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

-- The sessions already written, counted once (the triggers above hold writers off until this
-- migration commits, so none is missed or counted twice).
INSERT INTO app_callback_session_counts (tenant_id, app_name, status, sessions)
SELECT tenant_id, app_name, status, count(*) FROM app_callback_sessions GROUP BY 1, 2, 3;
