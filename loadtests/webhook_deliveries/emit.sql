-- :batch outbound events `app.circuit.opened` of random benchmark tenants in one transaction,
-- written to the outbox as the circuits stage writes them (loadtests/webhook_deliveries/run: pgbench at
-- a fixed rate of these transactions): the relay sends them to `outbound.events`, the outbound
-- stage records each with a delivery per endpoint, and the dispatchers send those. Events are
-- written in batches so the generator's own commits do not take the cores the product needs.
INSERT INTO outbox (topic, key, payload, headers)
SELECT 'outbound.events', convert_to(t.tenant_id::text, 'UTF8'),
       convert_to(json_build_object(
         'id', e.id, 'tenant', t.tenant_id,
         'principal', json_build_object('kind', 'system', 'id', 'bench', 'name', 'bench'),
         'requestId', 'bench-outbound',
         'time', to_char(clock_timestamp() AT TIME ZONE 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
         'v', 1,
         'body', json_build_object('type', 'app.circuit.opened', 'app', 'kyc-check',
                                   'failures', 5))::text, 'UTF8'),
       jsonb_build_object('id', e.id::text)
FROM (SELECT gen_random_uuid() AS id, 1 + floor(random() * :tenants)::int AS n
      FROM generate_series(1, :batch)) e
JOIN outbound_bench_tenants t ON t.n = e.n;
