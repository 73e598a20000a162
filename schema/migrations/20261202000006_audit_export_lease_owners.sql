-- A scheduled export's lease names its holder: only the holder renews it (each part uploaded),
-- gives it back and marks its window covered, so a lease taken over after it expired cannot be
-- cleared by the worker that lost it.
ALTER TABLE audit_export_schedules ADD COLUMN lease_id uuid;
