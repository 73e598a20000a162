-- Outbound webhooks go by one name: the events a tenant's endpoints are sent are
-- `webhook_events`, beside `webhook_endpoints` and `webhook_deliveries` (they were
-- `outbound_events`; the `outbound.events` topic still carries them with the notifications).
ALTER TABLE outbound_events RENAME TO webhook_events;
ALTER INDEX outbound_events_pkey RENAME TO webhook_events_pkey;
-- Applied commands keep their inbox rows under the stage's name.
UPDATE inbox SET stage = 'webhook_endpoints' WHERE stage = 'endpoints';
