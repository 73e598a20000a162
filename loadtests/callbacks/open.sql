-- A run's asynchronous call opens a pending session for one of the benchmark's tenants, as the
-- runs stage writes it (loadtests/callbacks/run; tenants in callbacks_bench_tenants).
\set n random(1, 20)
\set s random(1, 4)
INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, external_id,
    workflow_run_id, step_id, status, created_at)
SELECT gen_random_uuid(), tenant_id, apps[1 + :s % cardinality(apps)],
    md5('callbacks-bench-version-' || apps[1 + :s % cardinality(apps)])::uuid, 'verify',
    'cb-' || md5(random()::text), gen_random_uuid(), 'step-1', 'pending', now()
FROM callbacks_bench_tenants WHERE n = :n;
