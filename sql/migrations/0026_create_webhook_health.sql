-- How each webhook endpoint is doing (docs/decisions.md "Issue 21"): attempt counts and
-- times for its statistics, and the failure streak that disables it. One row per webhook
-- that has had an attempt; kept beside `webhooks` so the delivery workers' frequent
-- updates never rewrite the webhook row the API reads and locks.

CREATE TABLE webhook_health (
    webhook_id         uuid PRIMARY KEY CONSTRAINT webhook_health_webhook_fk
                           REFERENCES webhooks (id) ON DELETE CASCADE,
    attempts_succeeded bigint NOT NULL DEFAULT 0,
    attempts_failed    bigint NOT NULL DEFAULT 0,
    last_success_at    timestamptz,
    last_failure_at    timestamptz,
    -- The first failed attempt since the last success (or since it was re-enabled);
    -- NULL while the endpoint is not failing.
    failing_since      timestamptz,
    -- Deliveries that went to the dead letters since then.
    dead_letters       integer NOT NULL DEFAULT 0,
    -- Set when the service disabled the endpoint; cleared when it is re-enabled.
    disabled_reason    text,
    disabled_at        timestamptz
);
