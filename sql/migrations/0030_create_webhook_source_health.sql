-- Failure streaks of each webhook endpoint per source (docs/decisions/webhooks.md): the
-- part of the tree an event came from, seen from the webhook's tenant. An endpoint that
-- serves others is disabled only for failures that more than one source shares, so
-- whoever causes failures in one subtree cannot switch it off for everyone. One row per
-- (webhook, source) while that source's deliveries are failing; a success deletes it.

CREATE TABLE webhook_source_health (
    webhook_id    uuid NOT NULL CONSTRAINT webhook_source_health_webhook_fk
                      REFERENCES webhooks (id) ON DELETE CASCADE,
    -- The webhook's own tenant (events of that tenant; the nil UUID for a global
    -- webhook's events without a tenant), or the tenant right below it on the path of
    -- the event's tenant (a root for a global webhook).
    source_id     uuid NOT NULL,
    -- The first failed attempt for this source since its last success.
    failing_since timestamptz NOT NULL,
    -- Deliveries of this source that went to the dead letters since then.
    dead_letters  integer NOT NULL DEFAULT 0,
    CONSTRAINT webhook_source_health_pkey PRIMARY KEY (webhook_id, source_id)
);
