-- One audit event a transaction for one of the benchmark's 20 largest tenants, as a stage
-- writes it in the transaction of its effect (loadtests/audit/run).
\set n random(1, 20)
\set i random(1, 1000000)
INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, subject_type,
    subject_id, payload, request_id, occurred_at)
SELECT gen_random_uuid(), tenant_id, 'app.callback.received', 'human', actors[1 + :i % 30],
       'Analyst', 'app', md5(:i::text), jsonb_build_object('n', :i, 'outcome', 'approved'),
       md5((:i * 7)::text), now()
FROM audit_bench_tenants WHERE n = :n;
