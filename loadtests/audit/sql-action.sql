-- GET /audit-events' own statements, filter 'action' (loadtests/audit/run).
\set n random(1, 20)
\set off 50 * random(0, 9)
\set a random(1, 11)
\set b random(1, 11)
\set k random(1, 30)
\set len random(3600, 1213200)
\set end random(0, 63072000 - 1213200)
SELECT id, occurred_at, action, actor_type, actor_id, actor_name, subject_type, subject_id, payload, request_id FROM audit_events WHERE tenant_id = (SELECT tenant_id FROM audit_bench_tenants WHERE n = :n) AND action = ANY(ARRAY[(ARRAY['app.callback.received', 'app.tested', 'case.decided', 'case.sla.breached', 'app.configured', 'workflow.published', 'rule.published', 'definition.approval.requested', 'definition.approval.approved', 'app.secret.stored', 'app.installed'])[:a]]) ORDER BY occurred_at DESC, id DESC LIMIT 50 OFFSET :off;
SELECT count(*) FROM (SELECT 1 FROM audit_events WHERE tenant_id = (SELECT tenant_id FROM audit_bench_tenants WHERE n = :n) AND action = ANY(ARRAY[(ARRAY['app.callback.received', 'app.tested', 'case.decided', 'case.sla.breached', 'app.configured', 'workflow.published', 'rule.published', 'definition.approval.requested', 'definition.approval.approved', 'app.secret.stored', 'app.installed'])[:a]]) LIMIT 100001) AS capped;
