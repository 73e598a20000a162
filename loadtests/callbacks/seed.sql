-- Callback sessions at the scale of the invocation history (BENCHMARKS.md, issue 11), for
-- loadtests/callbacks/run: :rows sessions of 20 tenants named callbacks-bench-<n> (tenant 1
-- about 30 % of the rows, tenant 20 about 2 %), two to four apps each, over three years (denser
-- in recent months), in chunks of :chunk rows so progress shows and no transaction grows huge.
-- Each workflow run started one to three sessions. About 85 % completed (with an output), 8 %
-- failed (with the vendor's reason), 7 % timed out; sessions of the last week are pending
-- about one time in five. Run with psql -v rows=10000000 -v chunk=1000000.
\set ON_ERROR_STOP on

CREATE TEMP TABLE seed_chunks AS
SELECT n, least(:chunk, :rows - (n - 1) * :chunk) AS size
FROM generate_series(1, ceil(:rows::numeric / :chunk)::integer) AS n;

SELECT 'chunks: ' || count(*) FROM seed_chunks;

SELECT format($insert$
INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, external_id,
    workflow_run_id, step_id, status, output, error, created_at, completed_at)
SELECT gen_random_uuid(),
       md5('callbacks-bench-' || tenant)::uuid,
       app,
       md5('callbacks-bench-version-' || app)::uuid,
       CASE WHEN step = 1 THEN 'verify' ELSE 'screen' END,
       'cb-' || md5(random()::text),
       run,
       'step-' || step,
       status,
       CASE WHEN status = 'completed' THEN jsonb_build_object('verified', score >= 20,
            'score', score, 'reference', 'ref-' || left(md5(random()::text), 12)) END,
       CASE WHEN status = 'failed' THEN 'declined: document expired' END,
       created,
       CASE WHEN status <> 'pending'
            THEN least(now(), created + make_interval(secs => 5 + random() * 900)) END
FROM (
    SELECT r.tenant, r.run, r.created, s.step,
           (ARRAY['kyc-check', 'aml-screen', 'doc-verify', 'bank-link'])
               [1 + floor(random() * (2 + r.tenant %% 3))::integer] AS app,
           floor(random() * 100)::integer AS score,
           CASE WHEN r.created > now() - interval '7 days' AND random() < 0.2 THEN 'pending'
                WHEN s.roll < 0.85 THEN 'completed'
                WHEN s.roll < 0.93 THEN 'failed'
                ELSE 'timed_out' END AS status
    FROM (
        SELECT 1 + floor(20 * power(random(), 2.5))::integer AS tenant,
               gen_random_uuid() AS run,
               now() - interval '3 years' * power(random(), 2) AS created,
               1 + floor(random() * 3)::integer AS steps
        FROM generate_series(1, ceil(%s / 1.9)::integer)
    ) r
    CROSS JOIN LATERAL (SELECT step, random() AS roll FROM generate_series(1, r.steps) AS step) s
    LIMIT %s
) seeded
$insert$, size, size)
FROM seed_chunks ORDER BY n
\gexec

VACUUM ANALYZE app_callback_sessions;

SELECT 'seeded: ' || count(*) || ' sessions of ' || count(DISTINCT tenant_id) || ' tenants'
FROM app_callback_sessions
WHERE tenant_id IN (SELECT md5('callbacks-bench-' || n)::uuid FROM generate_series(1, 20) n);
