-- Tells readers that a tenant's invocation history changed, so that in-process read caches drop
-- that tenant's answers. pg_notify is delivered at commit (never for a rolled-back write) and
-- identical notifications of one transaction are folded into one, so a batch insert costs one
-- message per tenant. Every writer is covered, including tests and hand-written SQL.
CREATE FUNCTION app_invocations_notify_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('app_invocations_changed', OLD.tenant_id::text);
    ELSE
        PERFORM pg_notify('app_invocations_changed', NEW.tenant_id::text);
        IF TG_OP = 'UPDATE' AND OLD.tenant_id <> NEW.tenant_id THEN
            PERFORM pg_notify('app_invocations_changed', OLD.tenant_id::text);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER app_invocations_changed
    AFTER INSERT OR UPDATE OR DELETE ON app_invocations
    FOR EACH ROW EXECUTE FUNCTION app_invocations_notify_changed();

-- TRUNCATE names no rows: '*' tells readers to drop every tenant's answers.
CREATE FUNCTION app_invocations_notify_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('app_invocations_changed', '*');
    RETURN NULL;
END;
$$;

CREATE TRIGGER app_invocations_truncated
    AFTER TRUNCATE ON app_invocations
    FOR EACH STATEMENT EXECUTE FUNCTION app_invocations_notify_truncated();
