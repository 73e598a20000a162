-- no-transaction
-- GET /app-callbacks narrowed by app and status reads its page's entries in order from this
-- index (20261201000002_callback_session_counts.sql says why the list is read this way). Built
-- CONCURRENTLY, outside a transaction, so writers of a large sessions table go on meanwhile; IF
-- NOT EXISTS lets a build that was interrupted be run again (drop an INVALID index left by an
-- interrupted build by hand first).
CREATE INDEX CONCURRENTLY IF NOT EXISTS app_callback_sessions_tenant_app_status
    ON app_callback_sessions (tenant_id, app_name, status, created_at DESC, id DESC);
