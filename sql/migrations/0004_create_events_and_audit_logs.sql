-- The transactional outbox (one row per emitted event, written with the change) and
-- the audit log (one row per mutating request, written with the change).

CREATE TABLE events (
    id         uuid PRIMARY KEY,
    type       text NOT NULL,
    -- No foreign key: a purge deletes a tenant's events itself.
    tenant_id  uuid,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant_idx ON events (tenant_id);
CREATE INDEX events_created_at_idx ON events (created_at);

CREATE TABLE audit_logs (
    id            uuid PRIMARY KEY,
    -- No foreign key: entries outlive a purged tenant (with their changes redacted).
    tenant_id     uuid,
    actor_id      text NOT NULL,
    actor_type    text NOT NULL,
    action        text NOT NULL,
    resource_type text NOT NULL,
    resource_id   text,
    changes       jsonb,
    request_id    text,
    ip_address    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_logs_actor_type_check CHECK (actor_type IN ('api_key', 'jwt', 'system'))
);
-- Newest first (ids are UUIDv7), optionally for one tenant or one action.
CREATE INDEX audit_logs_tenant_idx ON audit_logs (tenant_id, id);
CREATE INDEX audit_logs_action_idx ON audit_logs (action, id);
CREATE INDEX audit_logs_created_at_idx ON audit_logs (created_at);
