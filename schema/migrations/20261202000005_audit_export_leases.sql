-- A scheduled export claims its window with a lease instead of holding the schedule's row lock
-- while it writes: the apps stage's change of a schedule never waits behind a running export.
-- A worker that dies leaves the lease to expire, and the window is written again.
ALTER TABLE audit_export_schedules ADD COLUMN running_until timestamptz;
