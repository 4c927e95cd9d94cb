-- The transactional outbox and the audit log: written in the transaction of the change.

-- name: insert_events
-- Append events from parallel arrays (id, type, tenant, payload).
INSERT INTO events (id, type, tenant_id, payload)
SELECT e.id, e.type, e.tenant_id, e.payload
FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::jsonb[]) AS e(id, type, tenant_id, payload);

-- name: insert_audit_logs
-- Record audit entries from parallel arrays (one per changed resource).
INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, action, resource_type,
                        resource_id, changes, request_id, ip_address)
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address
FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::jsonb[], $9::text[], $10::text[])
     AS a(id, tenant_id, actor_id, actor_type, action, resource_type, resource_id, changes,
          request_id, ip_address);
