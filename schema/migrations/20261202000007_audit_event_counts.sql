-- GET /audit-events at 10 M events (a tenant with 3 M): totals from counts the database keeps,
-- as 20261201000002_callback_session_counts.sql does for GET /app-callbacks (which says why
-- writers append changes rather than update counts, and why a reader adding counts and changes
-- in one statement is exact at its snapshot).
--
-- 1. audit_event_counts: events per tenant, action and actor. A list filtered by actions, an
--    actor, both or neither adds these up instead of counting up to 100,001 index entries
--    (about 30 ms of a core for a large tenant, 9 ms for one of its actors, which set the
--    route's p99 on two cores: BENCHMARKS "The audit log"). A list filtered by time still
--    counts rows: the window's range of the time index is what it selects.
-- 2. Events are only ever inserted; the delete and truncate triggers keep the counts true for
--    operators' and tests' deletions all the same.
-- 3. Events without a tenant (platform actions) are listed by no tenant and counted nowhere.
-- 4. After writes that bypassed the triggers, audit_event_counts_rebuild() counts again.
--
-- Applying it holds writers of audit_events off while it counts the events already written (one
-- pass over the events; about 30 s for 20 M).

CREATE TABLE audit_event_counts (
    tenant_id uuid   NOT NULL,
    action    text   NOT NULL,
    actor_id  text   NOT NULL,
    events    bigint NOT NULL,
    PRIMARY KEY (tenant_id, action, actor_id)
);

CREATE TABLE audit_event_count_changes (
    tenant_id uuid   NOT NULL,
    action    text   NOT NULL,
    actor_id  text   NOT NULL,
    events    bigint NOT NULL
);

CREATE INDEX audit_event_count_changes_key
    ON audit_event_count_changes (tenant_id, action, actor_id);

-- Emptied every second (see the callback session counts' changes).
ALTER TABLE audit_event_count_changes SET (
    vacuum_truncate = off,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000
);

CREATE FUNCTION audit_events_counted_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_event_count_changes (tenant_id, action, actor_id, events)
    SELECT tenant_id, action, actor_id, count(*) FROM added WHERE tenant_id IS NOT NULL
    GROUP BY 1, 2, 3;
    RETURN NULL;
END;
$$;

-- An update never moves an event between tenants, actions or actors in this code; should an
-- operator's do so, the counts follow it.
CREATE FUNCTION audit_events_counted_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_event_count_changes (tenant_id, action, actor_id, events)
    SELECT tenant_id, action, actor_id, sum(moved)
    FROM (SELECT tenant_id, action, actor_id, 1 AS moved FROM added
          UNION ALL
          SELECT tenant_id, action, actor_id, -1 FROM removed) AS changed
    WHERE tenant_id IS NOT NULL
    GROUP BY 1, 2, 3
    HAVING sum(moved) <> 0;
    RETURN NULL;
END;
$$;

CREATE FUNCTION audit_events_counted_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit_event_count_changes (tenant_id, action, actor_id, events)
    SELECT tenant_id, action, actor_id, -count(*) FROM removed WHERE tenant_id IS NOT NULL
    GROUP BY 1, 2, 3;
    RETURN NULL;
END;
$$;

CREATE FUNCTION audit_events_counted_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE audit_event_counts, audit_event_count_changes;
    RETURN NULL;
END;
$$;

CREATE TRIGGER audit_events_counted_insert
    AFTER INSERT ON audit_events REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_counted_insert();
CREATE TRIGGER audit_events_counted_update
    AFTER UPDATE ON audit_events REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_counted_update();
CREATE TRIGGER audit_events_counted_delete
    AFTER DELETE ON audit_events REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_counted_delete();
CREATE TRIGGER audit_events_counted_truncate
    AFTER TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_counted_truncate();

-- Folds the changes seen now into the counts and answers how many change rows it folded; the
-- pipeline calls it every second (pipeline/src/kept_counts.rs). Safe beside readers, writers and
-- another fold for the reasons app_callback_session_counts_fold gives.
CREATE FUNCTION audit_event_counts_fold() RETURNS bigint
LANGUAGE sql AS $$
    WITH folded AS (
        DELETE FROM audit_event_count_changes
        RETURNING tenant_id, action, actor_id, events
    ), added AS (
        INSERT INTO audit_event_counts AS c (tenant_id, action, actor_id, events)
        SELECT tenant_id, action, actor_id, sum(events) FROM folded
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (tenant_id, action, actor_id)
            DO UPDATE SET events = c.events + EXCLUDED.events
    )
    SELECT count(*) FROM folded
$$;

-- Counts every event again: of `only_tenant`, or of every tenant when it is NULL, with writers
-- held off (SHARE lock until the caller's transaction ends). Answers the events counted.
CREATE FUNCTION audit_event_counts_rebuild(only_tenant uuid DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    counted bigint;
BEGIN
    LOCK TABLE audit_events IN SHARE MODE;
    DELETE FROM audit_event_count_changes WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    DELETE FROM audit_event_counts WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    INSERT INTO audit_event_counts (tenant_id, action, actor_id, events)
    SELECT tenant_id, action, actor_id, count(*) FROM audit_events
    WHERE tenant_id IS NOT NULL AND (only_tenant IS NULL OR tenant_id = only_tenant)
    GROUP BY 1, 2, 3;
    SELECT coalesce(sum(events), 0) INTO counted FROM audit_event_counts
    WHERE only_tenant IS NULL OR tenant_id = only_tenant;
    RETURN counted;
END;
$$;

-- The events already written, counted once (creating the triggers above holds writers off until
-- this migration commits, so none is missed or counted twice).
SELECT audit_event_counts_rebuild();
