-- The trace a run's timer continues: the `traceparent` of the span that set it (a call's retry
-- delay or callback deadline, the webhook or uninstall that settled a session), so the run's
-- resume joins that trace. NULL when the span that set it had no trace context.
ALTER TABLE run_timers ADD COLUMN traceparent text;
