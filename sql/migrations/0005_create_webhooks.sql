-- Webhook subscriptions and their deliveries. Each event fans out to one delivery per
-- matching active webhook inside the transaction that wrote the event.

CREATE TABLE webhooks (
    id                           uuid PRIMARY KEY,
    tenant_id                    uuid CONSTRAINT webhooks_tenant_fk
                                     REFERENCES tenants (id) ON DELETE CASCADE,
    url                          text NOT NULL,
    events                       text[] NOT NULL,
    -- v1:<iv>:<tag>:<ciphertext>, associated data bound to the webhook id.
    encrypted_secret             text NOT NULL,
    -- The secret before the last rotation, still signing for 24 hours.
    previous_encrypted_secret    text,
    previous_secret_expires_at   timestamptz,
    description                  text NOT NULL DEFAULT '',
    active                       boolean NOT NULL DEFAULT true,
    include_descendants          boolean NOT NULL DEFAULT false,
    created_at                   timestamptz NOT NULL DEFAULT now(),
    updated_at                   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhooks_events_not_empty CHECK (cardinality(events) > 0)
);
CREATE INDEX webhooks_tenant_idx ON webhooks (tenant_id) WHERE active;

CREATE TABLE webhook_deliveries (
    id                 uuid PRIMARY KEY,
    webhook_id         uuid NOT NULL CONSTRAINT webhook_deliveries_webhook_fk
                           REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id           uuid NOT NULL CONSTRAINT webhook_deliveries_event_fk
                           REFERENCES events (id) ON DELETE CASCADE,
    event_type         text NOT NULL,
    status             text NOT NULL DEFAULT 'pending',
    attempts           integer NOT NULL DEFAULT 0,
    max_attempts       integer NOT NULL,
    next_attempt_at    timestamptz,
    last_attempt_at    timestamptz,
    last_response_code integer,
    last_error         text,
    -- A worker's claim: another worker may take the delivery once the lease ends.
    lease_expires_at   timestamptz,
    leased_by          text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'success', 'failed'))
);
-- Workers claim due pending deliveries in next_attempt_at order.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_failed_idx ON webhook_deliveries (id) WHERE status = 'failed';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
