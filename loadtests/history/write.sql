-- One invocation record per transaction for one of the benchmark's tenants (table
-- history_bench_tenants, written by loadtests/history/run), on one of its apps, as the runs
-- stage writes them.
\set n random(1, 20)
\set s random(1, 100)
\set d random(5, 3000)
INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, workflow_run_id,
    subject_id, input, output, status, error, duration_ms, invoked_at, idempotency_key, attempt,
    usage_http_requests, usage_document_reads, usage_log_lines)
SELECT gen_random_uuid(), tenant_id, apps[1 + :s % cardinality(apps)],
    '00000000-0000-4000-8000-000000000001', 'check', gen_random_uuid(), gen_random_uuid(),
    '{"name": "Ada Lovelace", "country": "GB", "dateOfBirth": "1815-12-10", "address": {"city": "London", "lines": ["12 Baker St", "flat 2"]}}',
    '{"score": 0.2, "match": false, "reasons": ["name", "dob"]}',
    CASE WHEN :s <= 90 THEN 'success' WHEN :s <= 95 THEN 'error' WHEN :s <= 97 THEN 'timeout' ELSE 'pending' END,
    CASE WHEN :s > 90 AND :s <= 95 THEN 'vendor answered 503' END,
    :d, now(), 'run:bench:step:check', 1, 1, 0, 1
FROM history_bench_tenants WHERE n = :n;
