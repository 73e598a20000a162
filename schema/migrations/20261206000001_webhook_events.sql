-- Outbound webhooks go by one name: the events a tenant's endpoints are sent are
-- `webhook_events`, beside `webhook_endpoints` and `webhook_deliveries` (they were
-- `outbound_events`; the `outbound.events` topic still carries them with the notifications).
ALTER TABLE outbound_events RENAME TO webhook_events;
ALTER INDEX outbound_events_pkey RENAME TO webhook_events_pkey;
-- For one release: a pipeline of 0.1 still running beside the first of 0.2 records its events
-- (`INSERT ... ON CONFLICT (id) DO NOTHING` goes through a simple view) and claims its
-- deliveries through the old name. The release after 0.2 drops it (docs/operations.md).
CREATE VIEW outbound_events AS SELECT * FROM webhook_events;
