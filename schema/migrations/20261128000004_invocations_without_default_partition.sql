-- The default partition of app_invocations goes. While it exists, Postgres cannot read the
-- monthly partitions as one ordered sequence (the default could hold any month), so every
-- "newest first" page merged the first key of every month of history (a Merge Append over
-- three years is 36 index descents per query) instead of reading the newest months until the
-- page is full (an ordered Append). Months are created ahead by the pipeline, and before any
-- backfill by whoever writes one (app_invocations_ensure_partitions; the seeding command does).
-- A row for a month without a partition now fails its insert instead of hiding in the default.

-- Rows already in the default move to their months' partitions (the function of migration
-- 20261128000003 moves them), then it is dropped.
DO $$
DECLARE
    first_month date;
    last_month  date;
BEGIN
    SELECT date_trunc('month', min(invoked_at))::date, date_trunc('month', max(invoked_at))::date
      INTO first_month, last_month
      FROM app_invocations_default;
    IF first_month IS NOT NULL THEN
        PERFORM app_invocations_ensure_partitions(
            first_month,
            (extract(year FROM age(last_month, first_month)) * 12
             + extract(month FROM age(last_month, first_month)))::integer + 1);
    END IF;
END;
$$;

DROP TABLE app_invocations_default;

CREATE OR REPLACE FUNCTION app_invocations_ensure_partitions(from_day date, months integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    month_start date := date_trunc('month', from_day)::date;
    month_end   date;
    part_name   text;
BEGIN
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
