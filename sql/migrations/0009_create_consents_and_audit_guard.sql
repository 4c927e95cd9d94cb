-- Consent records, the append-only guard on audit_logs, and the indexes retention and
-- the audit API filter on.

CREATE TABLE consents (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL CONSTRAINT consents_tenant_fk
                   REFERENCES tenants (id) ON DELETE CASCADE,
    purpose    text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    granted_by text NOT NULL,
    revoked_at timestamptz,
    revoked_by text,
    expires_at timestamptz,
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,
    CONSTRAINT consents_purpose_format CHECK (purpose ~ '^[a-z][a-z0-9_.-]{0,63}$'),
    CONSTRAINT consents_metadata_object CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT consents_revoked_by_whom CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
-- A tenant's history, newest first, optionally for one purpose.
CREATE INDEX consents_tenant_purpose_idx ON consents (tenant_id, purpose, id);
CREATE INDEX consents_tenant_idx ON consents (tenant_id, id);
-- Retention: records that ended (revoked or expired) longest ago first.
CREATE INDEX consents_ended_idx ON consents ((least(revoked_at, expires_at)), id)
    WHERE revoked_at IS NOT NULL OR expires_at IS NOT NULL;

-- A consent record as the API shows it: its status follows from the clock.
CREATE VIEW consent_records AS
SELECT c.id, c.tenant_id, c.purpose, c.granted_at, c.granted_by, c.revoked_at, c.revoked_by,
       c.expires_at, c.metadata,
       CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
            WHEN c.expires_at IS NOT NULL AND c.expires_at <= now() THEN 'expired'
            ELSE 'granted' END AS status
FROM consents c;

-- "What did this actor do?" without reading the whole log.
CREATE INDEX audit_logs_actor_idx ON audit_logs (actor_id, id);
-- Retention of finished deliveries (pending ones are never removed).
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (updated_at, id)
    WHERE status <> 'pending';
-- Retention of archived tenants.
CREATE INDEX tenants_archived_idx ON tenants (deleted_at, id) WHERE status = 'archived';

-- Audit entries are append-only. Two paths may touch them, each opening its door for the
-- rest of its own transaction only (set_config(..., true)):
--   tenant_service.audit_redaction = 'on'   a GDPR purge may replace `changes` with the
--                                           redaction marker, and change nothing else;
--   tenant_service.audit_retention_before   retention may delete entries created before
--                                           that instant.
-- Anything else (an UPDATE or DELETE from psql, a bug) fails.
CREATE FUNCTION audit_logs_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    cutoff text := nullif(current_setting('tenant_service.audit_retention_before', true), '');
BEGIN
    IF TG_OP = 'UPDATE'
       AND current_setting('tenant_service.audit_redaction', true) = 'on'
       AND NEW.changes = '{"redacted": true}'::jsonb
       AND (NEW.id, NEW.tenant_id, NEW.actor_id, NEW.actor_type, NEW.action,
            NEW.resource_type, NEW.resource_id, NEW.request_id, NEW.ip_address, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.tenant_id, OLD.actor_id, OLD.actor_type, OLD.action,
            OLD.resource_type, OLD.resource_id, OLD.request_id, OLD.ip_address, OLD.created_at)
    THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND cutoff IS NOT NULL AND OLD.created_at < cutoff::timestamptz THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit log entries cannot be changed or deleted (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_logs_append_only
    BEFORE UPDATE OR DELETE ON audit_logs
    FOR EACH ROW EXECUTE FUNCTION audit_logs_guard();

CREATE FUNCTION audit_logs_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'audit log entries cannot be truncated'
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_logs_no_truncate
    BEFORE TRUNCATE ON audit_logs
    FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_truncate();
