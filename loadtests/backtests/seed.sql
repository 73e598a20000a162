-- A tenant's rule evaluations as the backtest benchmark brings them (BENCHMARKS.md
-- "Backtests"): rule set `risk` of 20 rules (10 published rules it names, 10 inline), version 1
-- published and version 2 with five of its inline rules' thresholds moved; :rows evaluations of version 1 over the
-- last 30 days, each with the data its rules saw (a subject, a KYC answer, a device, a
-- transaction: about 700 bytes) and every rule's recorded outcome. Writes backtest_bench
-- (tenant_id) for loadtests/backtests/run.
\set ON_ERROR_STOP on
BEGIN;
CREATE TABLE backtest_bench (tenant_id uuid NOT NULL);
INSERT INTO backtest_bench VALUES (gen_random_uuid());

-- The 20 rules: a path and, per version, the threshold (`gt` unless named otherwise).
CREATE TEMP TABLE bench_rules AS
SELECT n, 'r' || n AS id, n <= 10 AS named, path, op, v1, coalesce(v2, v1) AS v2
FROM (VALUES
  (1, 'kyc.score', 'lt', '0.3'::jsonb, NULL::jsonb),
  (2, 'txn.amount', 'gt', '5000', NULL),
  (3, 'txn.velocity', 'gt', '8', NULL),
  (4, 'subject.age', 'lt', '18', NULL),
  (5, 'subject.country', 'in', '["IR", "KP", "SY"]', NULL),
  (6, 'device.emulator', 'eq', 'true', NULL),
  (7, 'kyc.pep', 'eq', 'true', NULL),
  (8, 'kyc.hits.0.score', 'gt', '0.9', NULL),
  (9, 'device.age_days', 'lt', '2', NULL),
  (10, 'txn.chargebacks', 'gt', '2', NULL),
  (11, 'kyc.score', 'lt', '0.1', '0.15'),
  (12, 'txn.amount', 'gt', '11000', '10000'),
  (13, 'txn.velocity', 'gt', '20', '15'),
  (14, 'subject.age', 'gt', '95', NULL),
  (15, 'device.vpn', 'eq', 'true', NULL),
  (16, 'kyc.document.expired', 'eq', 'true', NULL),
  (17, 'txn.currency', 'ne', '"EUR"', NULL),
  (18, 'device.country_mismatch', 'eq', 'true', NULL),
  (19, 'kyc.hits.1.score', 'gt', '0.95', '0.9'),
  (20, 'subject.email_domain', 'in', '["mailinator.com", "tempmail.io"]', '["mailinator.com", "tempmail.io", "outlook.com"]')
) AS r(n, path, op, v1, v2);

CREATE TEMP TABLE bench_versions AS
SELECT tenant_id, 'rule'::text AS kind, id AS key, 1 AS version,
       jsonb_build_object('type', 'field', 'path', path,
                          'failWhen', jsonb_build_object('op', op, 'value', v1)) AS body
FROM bench_rules, backtest_bench WHERE named
UNION ALL
SELECT tenant_id, 'rule_set', 'risk', v,
       jsonb_build_object('rules', jsonb_agg(
         CASE WHEN named THEN jsonb_build_object('rule', id)
              ELSE jsonb_build_object('type', 'field', 'id', id, 'path', path,
                     'failWhen', jsonb_build_object('op', op,
                        'value', CASE WHEN v = 1 THEN v1 ELSE v2 END)) END ORDER BY n))
FROM bench_rules, backtest_bench, generate_series(1, 2) AS v
GROUP BY tenant_id, v;

INSERT INTO definition_versions (tenant_id, kind, key, version, body, created_by, published_at,
                                 published_by)
SELECT tenant_id, kind, key, version, body, 'bench', CASE WHEN version = 1 THEN now() END,
       CASE WHEN version = 1 THEN 'bench' END
FROM bench_versions;
INSERT INTO definition_keys (tenant_id, kind, key, latest_version, published_version)
SELECT tenant_id, kind, key, max(version), 1 FROM bench_versions GROUP BY 1, 2, 3;
COMMIT;

-- The evaluations, version 1's outcomes recorded.
INSERT INTO rule_evaluations (id, tenant_id, subject_id, run_id, workflow_key, workflow_version,
                              step_id, rule_set_key, rule_set_version, decision, rules,
                              rule_keys, data, duration_ms, evaluated_at)
SELECT gen_random_uuid(), b.tenant_id, gen_random_uuid(), gen_random_uuid(), 'onboarding', 1,
       'risk', 'risk', 1,
       CASE WHEN bool_or(o.fails) THEN 'fail' ELSE 'pass' END,
       jsonb_agg(jsonb_build_object('id', r.id, 'type', 'field',
                   'outcome', CASE WHEN o.fails THEN 'fail' ELSE 'pass' END)
                 || CASE WHEN r.named THEN jsonb_build_object('key', r.id, 'version', 1)
                         ELSE '{}'::jsonb END ORDER BY r.n),
       ARRAY['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9', 'r10'],
       e.data, 0.4, e.at
FROM backtest_bench b
CROSS JOIN LATERAL (
  SELECT i, now() - make_interval(secs => (random() * 30 * 86400)::int) AS at,
    jsonb_build_object(
      'subject', jsonb_build_object('name', 'Subject ' || i, 'age', 16 + (random() * 80)::int,
        'country', (ARRAY['GB', 'FR', 'DE', 'US', 'RU', 'IR', 'ES', 'IT'])[1 + (random() * 7)::int],
        'email_domain', (ARRAY['gmail.com', 'outlook.com', 'mailinator.com', 'corp.example'])[1 + (random() * 3)::int]),
      'kyc', jsonb_build_object('score', round(random()::numeric, 3), 'pep', random() < 0.02,
        'hits', jsonb_build_array(jsonb_build_object('list', 'PEP', 'score', round(random()::numeric, 3)),
                                  jsonb_build_object('list', 'SANCTIONS', 'score', round(random()::numeric, 3))),
        'document', jsonb_build_object('type', 'passport', 'expired', random() < 0.03)),
      'device', jsonb_build_object('emulator', random() < 0.01, 'vpn', random() < 0.08,
        'age_days', (random() * 400)::int, 'country_mismatch', random() < 0.05),
      'txn', jsonb_build_object('amount', round((random() * 12000)::numeric, 2),
        'currency', (ARRAY['EUR', 'EUR', 'EUR', 'GBP', 'USD'])[1 + (random() * 4)::int],
        'velocity', (random() * 25)::int, 'chargebacks', (random() * 4)::int)) AS data
  FROM generate_series(1, :rows) AS i
) AS e
CROSS JOIN bench_rules r
CROSS JOIN LATERAL (SELECT CASE r.op
    WHEN 'gt' THEN (e.data #> string_to_array(r.path, '.'))::text::numeric > r.v1::text::numeric
    WHEN 'lt' THEN (e.data #> string_to_array(r.path, '.'))::text::numeric < r.v1::text::numeric
    WHEN 'eq' THEN e.data #> string_to_array(r.path, '.') = r.v1
    WHEN 'ne' THEN e.data #> string_to_array(r.path, '.') <> r.v1
    WHEN 'in' THEN r.v1 @> jsonb_build_array(e.data #> string_to_array(r.path, '.'))
  END AS fails) AS o
GROUP BY b.tenant_id, e.i, e.data, e.at;
ANALYZE rule_evaluations;
