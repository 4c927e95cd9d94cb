-- The transactional outbox and the audit log: written in the transaction of the change.
-- Each event fans out to its webhook deliveries in the statement that stores it.

-- name: insert_changes :value
-- A change's audit entries (parallel arrays, one per changed resource) and its events
-- (id, type, tenant, payload), and one pending delivery (due now, max_attempts allowed)
-- per event and matching active webhook, in one statement; wakes the delivery workers
-- when the transaction commits. Returns how many deliveries were queued.
WITH
new_audit AS (
    -- the audit entries
    INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, action, resource_type,
                            resource_id, changes, request_id, ip_address)
    SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
           a.resource_id, a.changes, a.request_id, a.ip_address
    FROM unnest(:'entry_ids'::uuid[], :'entry_tenant_ids'::uuid[], :'actor_ids'::text[],
                :'actor_types'::text[], :'actions'::text[], :'resource_types'::text[],
                :'resource_ids'::text[], :'changes'::jsonb[], :'request_ids'::text[],
                :'ip_addresses'::text[])
         AS a(id, tenant_id, actor_id, actor_type, action, resource_type, resource_id,
              changes, request_id, ip_address)
),
new_events AS (
    -- the events, stored
    INSERT INTO events (id, type, tenant_id, payload)
    SELECT e.id, e.type, e.tenant_id, e.payload
    FROM unnest(:'event_ids'::uuid[], :'event_types'::text[], :'event_tenant_ids'::uuid[],
                :'payloads'::jsonb[])
         AS e(id, type, tenant_id, payload)
    RETURNING id, type, tenant_id, payload
),
targets AS (
    -- every (event, webhook) pair to deliver, once each
    -- global webhooks see every tenant's events
    SELECT e.id AS event_id, e.type, w.id AS webhook_id
    FROM new_events e
    JOIN webhooks w ON w.tenant_id IS NULL AND w.active AND e.type = ANY (w.events)
    UNION
    -- the tenant's own webhooks
    SELECT e.id, e.type, w.id
    FROM new_events e
    JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.active AND e.type = ANY (w.events)
    UNION
    -- webhooks of its ancestors that include descendants
    SELECT e.id, e.type, w.id
    FROM new_events e
    JOIN tenant_closure c ON c.descendant_id = e.tenant_id AND c.depth > 0
    JOIN webhooks w ON w.tenant_id = c.ancestor_id AND w.include_descendants AND w.active
                   AND e.type = ANY (w.events)
    UNION
    -- a moved subtree also leaves its former ancestors: tell theirs too
    SELECT e.id, e.type, w.id
    FROM new_events e
    CROSS JOIN LATERAL
         unnest(string_to_array(ltrim(e.payload ->> 'old_ancestry_path', '/'), '/'))
         AS old(ancestor_text)
    JOIN webhooks w ON w.tenant_id::text = old.ancestor_text AND w.include_descendants
                   AND w.active AND e.type = ANY (w.events)
    WHERE e.type = 'tenant.moved'
      AND old.ancestor_text <> e.tenant_id::text
),
new_deliveries AS (
    -- one pending delivery per pair, due now
    INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, status,
                                    max_attempts, next_attempt_at)
    -- a UUIDv7: 48 bits of Unix milliseconds, version 7, random bits (RFC 9562)
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  placing substring(int8send(floor(extract(epoch FROM clock_timestamp())
                                                   * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
           t.webhook_id, t.event_id, t.type, 'pending', :'max_attempts'::integer, now()
    FROM targets t
    ORDER BY t.event_id, t.webhook_id
    RETURNING id
),
-- wake the workers once (NOTIFY is delivered when the transaction commits)
notified AS (
    SELECT pg_notify('webhook_deliveries', '')
    FROM (SELECT 1 FROM new_deliveries LIMIT 1) AS any_row
)
SELECT (SELECT count(*) FROM new_deliveries) AS deliveries,
       (SELECT count(*) FROM notified) AS woken;
