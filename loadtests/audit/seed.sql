-- An audit log as a platform of many tenants brings it (BENCHMARKS.md "The audit log"):
-- :rows events over 100 tenants, one holding 30 %, nineteen 2.5 % each, eighty the rest; each
-- tenant with 30 actors; actions mixed as the stages write them (callbacks received most); two
-- years of time. Writes audit_bench_tenants (n, tenant_id, actors) for the readers.
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS audit_bench_tenants;
CREATE TABLE audit_bench_tenants AS
SELECT n, gen_random_uuid() AS tenant_id,
       ARRAY(SELECT 'user-' || n || '-' || a FROM generate_series(1, 30) AS a) AS actors,
       (CASE WHEN n = 1 THEN 0.30 WHEN n <= 20 THEN 0.025 ELSE 0.225 / 80 END * :rows)::bigint AS rows
FROM generate_series(1, 100) AS n;

INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, subject_type,
    subject_id, payload, request_id, occurred_at)
SELECT gen_random_uuid(), t.tenant_id, a.action,
       CASE WHEN a.action LIKE 'case.sla%' THEN 'system' ELSE 'human' END,
       t.actors[1 + (i % 30)], 'Analyst ' || (i % 30), split_part(a.action, '.', 1),
       md5(i::text), jsonb_build_object('n', i, 'outcome', CASE WHEN i % 3 = 0 THEN 'approved' ELSE 'rejected' END,
                                        'app', 'vendor-' || (i % 7), 'version', 1 + i % 9),
       md5((i * 7)::text), now() - make_interval(secs => (random() * 2 * 365 * 86400)::float8)
FROM audit_bench_tenants t
CROSS JOIN LATERAL generate_series(1, t.rows) AS i
CROSS JOIN LATERAL (SELECT (ARRAY['app.callback.received', 'app.callback.received',
    'app.callback.received', 'app.callback.received', 'app.callback.received', 'app.tested',
    'case.decided', 'case.decided', 'case.sla.breached', 'app.configured', 'workflow.published',
    'rule.published', 'definition.approval.requested', 'definition.approval.approved',
    'app.secret.stored', 'app.installed'])[1 + (i * 31 + t.n) % 16] AS action) AS a;
-- A long-lived log is mostly all-visible: totals are counted from the index alone.
VACUUM ANALYZE audit_events;
