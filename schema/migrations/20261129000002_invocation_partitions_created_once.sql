-- Callers of app_invocations_ensure_partitions that run at once (two pipeline workers starting
-- together, the seeding command beside a worker, test processes on a fresh database) each saw
-- a month missing and created it: the second CREATE TABLE failed with 42P07 ("relation
-- already exists") and took its caller's start-up or transaction with it. The function now
-- holds a transaction-scoped advisory lock while it looks and creates, so callers take turns
-- and the later ones find the months made.

CREATE OR REPLACE FUNCTION app_invocations_ensure_partitions(from_day date, months integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    month_start date := date_trunc('month', from_day)::date;
    month_end   date;
    part_name   text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('app_invocations_ensure_partitions'));
    FOR i IN 0 .. months - 1 LOOP
        month_end := (month_start + interval '1 month')::date;
        part_name := format('app_invocations_y%sm%s',
                            to_char(month_start, 'YYYY'), to_char(month_start, 'MM'));
        IF to_regclass(part_name) IS NULL THEN
            EXECUTE format(
                'CREATE TABLE %I PARTITION OF app_invocations FOR VALUES FROM (%L) TO (%L)',
                part_name, month_start, month_end);
        END IF;
        month_start := month_end;
    END LOOP;
END;
$$;
