-- Every process caches rendered tenant contexts (service/usecases/read_cache.py).
-- These triggers announce each committed change that can alter a context on the
-- channel tenant_service_tenant_data, and every process empties its cache. Statement-level
-- (one announcement per statement, and PostgreSQL folds equal payloads of one
-- transaction into one), so a batch or a subtree move costs a single NOTIFY. NOTIFY is
-- transactional: nothing is announced for a rolled-back change.
--
-- Tenant inserts are left out: a new tenant changes no existing context (its own config
-- entries announce themselves).

CREATE FUNCTION notify_tenant_data_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tenant_service_tenant_data', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER config_entries_tenant_data_change
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON config_entries
    FOR EACH STATEMENT
    EXECUTE FUNCTION notify_tenant_data_change();

CREATE TRIGGER permission_policies_tenant_data_change
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON permission_policies
    FOR EACH STATEMENT
    EXECUTE FUNCTION notify_tenant_data_change();

CREATE TRIGGER tenants_tenant_data_change
    AFTER UPDATE OR DELETE OR TRUNCATE ON tenants
    FOR EACH STATEMENT
    EXECUTE FUNCTION notify_tenant_data_change();
