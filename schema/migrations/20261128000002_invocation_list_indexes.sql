-- Indexes of app_invocations shaped for GET /app-invocations at scale (readers::invocations).
--
-- A page is found first as keys (invoked_at, id) in index order, then only its rows are read:
-- for that, every filter's index ends with (invoked_at DESC, id DESC), and carries the columns
-- the other filters test (INCLUDE), so deep pages and combined filters scan the index alone
-- (index-only) instead of one heap row per skipped match. Every index leads with tenant_id.
--
--   no filter, from/to        the primary key (tenant_id, invoked_at, id), scanned backwards
--   workflowRunId (+ any)     app_invocations_tenant_run
--   appName (+ status, time)  app_invocations_tenant_app
--   status (+ time)           app_invocations_tenant_status, one ordered scan per status
--   GET /app-invocations/:id  app_invocations_tenant_id
--
-- app_invocations_tenant_time duplicated the primary key (a B-tree reads both ways): dropped,
-- one index less for every write.

DROP INDEX app_invocations_tenant_time;
DROP INDEX app_invocations_tenant_run;
DROP INDEX app_invocations_tenant_app;
DROP INDEX app_invocations_tenant_status;

CREATE INDEX app_invocations_tenant_run
    ON app_invocations (tenant_id, workflow_run_id, invoked_at DESC, id DESC)
    INCLUDE (app_name, status)
    WHERE workflow_run_id IS NOT NULL;
CREATE INDEX app_invocations_tenant_app
    ON app_invocations (tenant_id, app_name, invoked_at DESC, id DESC) INCLUDE (status);
CREATE INDEX app_invocations_tenant_status
    ON app_invocations (tenant_id, status, invoked_at DESC, id DESC) INCLUDE (app_name);
