-- app_invocations_ensure_partitions, again: a month whose rows already sit in the default
-- partition (history written before its partition existed: an import, a seed, a test) could not
-- get its partition, since Postgres refuses to attach one whose range the default holds rows
-- of. Such rows now move into the new partition in the same transaction. They move between
-- partitions directly, so the rollups' statement triggers (on the parent) do not count them
-- twice.
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
            IF EXISTS (SELECT 1 FROM app_invocations_default
                       WHERE invoked_at >= month_start AND invoked_at < month_end) THEN
                EXECUTE format('CREATE TABLE %I (LIKE app_invocations INCLUDING ALL)', part_name);
                EXECUTE format(
                    'WITH moved AS (DELETE FROM app_invocations_default '
                    'WHERE invoked_at >= %L AND invoked_at < %L RETURNING *) '
                    'INSERT INTO %I SELECT * FROM moved',
                    month_start, month_end, part_name);
                EXECUTE format(
                    'ALTER TABLE app_invocations ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                    part_name, month_start, month_end);
            ELSE
                EXECUTE format(
                    'CREATE TABLE %I PARTITION OF app_invocations FOR VALUES FROM (%L) TO (%L)',
                    part_name, month_start, month_end);
            END IF;
        END IF;
        month_start := month_end;
    END LOOP;
END;
$$;
