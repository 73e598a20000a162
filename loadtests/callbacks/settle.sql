-- A vendor's event settles one of a benchmark tenant's pending sessions, as the callbacks
-- stage does (loadtests/callbacks/run; tenants in callbacks_bench_tenants).
\set n random(1, 20)
UPDATE app_callback_sessions
SET status = 'completed', completed_at = now(),
    output = '{"verified": true, "score": 71, "reference": "ref-bench"}'
WHERE id = (
    SELECT s.id FROM app_callback_sessions s, callbacks_bench_tenants t
    WHERE t.n = :n AND s.tenant_id = t.tenant_id AND s.status = 'pending'
    LIMIT 1 FOR UPDATE OF s SKIP LOCKED);
