-- GET /audit-events' own statements, filter 'actor', prepared as sqlx prepares them
-- (loadtests/audit/run runs these with pgbench -M prepared).
\set n random(1, 20)
\set off 50 * random(0, 9)
\set a random(1, 11)
\set b random(1, 11)
\set k random(1, 30)
\set len random(3600, 1213200)
\set end random(0, 63072000 - 1213200)
-- What the route gets as bind parameters: the tenant, an actor, actions, the window's ends.
SELECT tenant_id AS t, actors[:k::int] AS actor, (ARRAY['app.callback.received', 'app.tested', 'case.decided', 'case.sla.breached', 'app.configured', 'workflow.published', 'rule.published', 'definition.approval.requested', 'definition.approval.approved', 'app.secret.stored', 'app.installed'])[:a::int] AS a1,
       (ARRAY['app.callback.received', 'app.tested', 'case.decided', 'case.sla.breached', 'app.configured', 'workflow.published', 'rule.published', 'definition.approval.requested', 'definition.approval.approved', 'app.secret.stored', 'app.installed'])[:b::int] AS a2,
       now() - make_interval(secs => :end::int + :len::int) AS wfrom,
       now() - make_interval(secs => :end::int) AS wto
FROM audit_bench_tenants WHERE n = :n::int \gset
SELECT id, occurred_at, action, actor_type, actor_id, actor_name, subject_type, subject_id, payload, request_id FROM (SELECT * FROM audit_events WHERE tenant_id = :t::uuid AND actor_id = :actor) AS events ORDER BY occurred_at DESC, id DESC LIMIT 50 OFFSET :off::int;
SELECT coalesce(sum(events), 0)::bigint FROM (SELECT events FROM audit_event_counts WHERE tenant_id = :t::uuid AND actor_id = :actor UNION ALL SELECT events FROM audit_event_count_changes WHERE tenant_id = :t::uuid AND actor_id = :actor) AS kept;
