-- One rule-set evaluation a transaction for the benchmark's tenant, as the runs stage records
-- it while runs go on (loadtests/backtests/run): the newest evaluation of `risk` copied with a
-- new id and the time now, so the sample's head moves while backtests read it.
INSERT INTO rule_evaluations (id, tenant_id, subject_id, run_id, workflow_key, workflow_version,
    step_id, rule_set_key, rule_set_version, decision, rules, rule_keys, data, duration_ms,
    evaluated_at)
SELECT gen_random_uuid(), tenant_id, gen_random_uuid(), gen_random_uuid(), workflow_key,
       workflow_version, step_id, rule_set_key, rule_set_version, decision, rules, rule_keys,
       data, duration_ms, now()
FROM rule_evaluations
WHERE tenant_id = (SELECT tenant_id FROM backtest_bench) AND rule_set_key = 'risk'
ORDER BY evaluated_at DESC, id DESC LIMIT 1;
