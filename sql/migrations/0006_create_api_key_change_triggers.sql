-- Every process caches API-key lookups (authentication costs no database round trip on
-- the hot path). These triggers announce every change that matters to authentication on
-- the channel tenant_service_api_keys, so each process drops its cached copy within a
-- second, whichever process, CLI or cascade made the change. NOTIFY is transactional:
-- the message is delivered on commit, never for a rolled-back change.
--
-- Payloads: 'key:<uuid>' (one key changed or was deleted) and 'role:<uuid>' (a role's
-- scopes changed or the role was deleted; keys holding it must be looked up again).

CREATE FUNCTION notify_api_key_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tenant_service_api_keys', 'key:' || OLD.id::text);
    RETURN NULL;
END;
$$;

CREATE FUNCTION notify_role_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tenant_service_api_keys', 'role:' || OLD.id::text);
    RETURN NULL;
END;
$$;

-- Only columns authentication reads: last_used_at (written once a minute per key) and
-- name changes must not flush caches.
CREATE TRIGGER api_keys_auth_change
    AFTER UPDATE ON api_keys
    FOR EACH ROW
    WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash
          OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
          OR OLD.scopes IS DISTINCT FROM NEW.scopes
          OR OLD.role_id IS DISTINCT FROM NEW.role_id
          OR OLD.rate_limit_max IS DISTINCT FROM NEW.rate_limit_max
          OR OLD.rate_limit_window_seconds IS DISTINCT FROM NEW.rate_limit_window_seconds
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
          OR OLD.revoked_at IS DISTINCT FROM NEW.revoked_at)
    EXECUTE FUNCTION notify_api_key_change();

CREATE TRIGGER api_keys_auth_delete
    AFTER DELETE ON api_keys
    FOR EACH ROW
    EXECUTE FUNCTION notify_api_key_change();

CREATE TRIGGER roles_auth_change
    AFTER UPDATE ON roles
    FOR EACH ROW
    WHEN (OLD.scopes IS DISTINCT FROM NEW.scopes)
    EXECUTE FUNCTION notify_role_change();

CREATE TRIGGER roles_auth_delete
    AFTER DELETE ON roles
    FOR EACH ROW
    EXECUTE FUNCTION notify_role_change();

