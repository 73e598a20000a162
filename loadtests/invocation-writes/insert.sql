-- One invocation record per transaction, as the runs stage writes them: 20 tenants, 5 apps,
-- mostly successes, a payload of a few hundred bytes.
\set t random(1, 20)
\set a random(1, 5)
\set s random(1, 100)
\set d random(5, 3000)
INSERT INTO app_invocations (id, tenant_id, app_name, version_id, action, workflow_run_id,
    input, output, status, error, duration_ms, invoked_at, idempotency_key, attempt,
    usage_http_requests, usage_document_reads, usage_log_lines)
VALUES (gen_random_uuid(), ('00000000-0000-4000-8000-0000000000' || lpad(:t::text, 2, '0'))::uuid,
    'app-' || :a, '00000000-0000-4000-8000-000000000001', 'check', gen_random_uuid(),
    '{"name": "Ada Lovelace", "country": "GB", "dateOfBirth": "1815-12-10", "address": {"city": "London", "lines": ["12 Baker St", "flat 2"]}, "documents": ["passport", "utility-bill"]}',
    '{"score": 0.2, "match": false, "reasons": ["name", "dob"]}',
    CASE WHEN :s <= 90 THEN 'success' WHEN :s <= 96 THEN 'error' WHEN :s <= 98 THEN 'timeout' ELSE 'pending' END,
    CASE WHEN :s > 90 AND :s <= 96 THEN 'vendor answered 500' END,
    :d, now(), 'run:x:step:check', 1, 2, 0, 3);
