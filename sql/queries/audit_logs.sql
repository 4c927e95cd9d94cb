-- The audit log: newest first (ids are UUIDv7, so id order is time order). Entries are
-- append-only; a trigger (migration 0009) refuses changes outside the two paths below
-- that open it for their own transaction: GDPR redaction and retention.

-- name: list_audit_logs :many
-- One page of the whole log, newest first, before cursor_id (NULL: from the newest), with
-- optional filters (each NULL: any).
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM audit_logs a
WHERE a.id < coalesce(:'cursor_id'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND (:'action'::text IS NULL OR a.action = :'action'::text)
  AND (:'resource_type'::text IS NULL OR a.resource_type = :'resource_type'::text)
  AND (:'actor_id'::text IS NULL OR a.actor_id = :'actor_id'::text)
  AND (:'created_from'::timestamptz IS NULL OR a.created_at >= :'created_from'::timestamptz)
  AND (:'created_to'::timestamptz IS NULL OR a.created_at < :'created_to'::timestamptz)
ORDER BY a.id DESC
LIMIT :'page_size'::integer;

-- name: list_tenant_audit_logs :many
-- One page of tenant_id's entries, newest first, driven by (tenant_id, id); page_size
-- NULL means every entry (the GDPR export).
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM audit_logs a
WHERE a.tenant_id = :'tenant_id'::uuid
  AND a.id < coalesce(:'cursor_id'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND (:'action'::text IS NULL OR a.action = :'action'::text)
  AND (:'resource_type'::text IS NULL OR a.resource_type = :'resource_type'::text)
  AND (:'actor_id'::text IS NULL OR a.actor_id = :'actor_id'::text)
  AND (:'created_from'::timestamptz IS NULL OR a.created_at >= :'created_from'::timestamptz)
  AND (:'created_to'::timestamptz IS NULL OR a.created_at < :'created_to'::timestamptz)
ORDER BY a.id DESC
LIMIT :'page_size'::integer;

-- name: list_subtree_audit_logs :many
-- One page of the entries of every tenant in root_id's subtree (a tenant-scoped caller),
-- newest first; entries without a tenant are not part of any subtree.
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM tenant_closure c
JOIN audit_logs a ON a.tenant_id = c.descendant_id
WHERE c.ancestor_id = :'root_id'::uuid
  AND a.id < coalesce(:'cursor_id'::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND (:'action'::text IS NULL OR a.action = :'action'::text)
  AND (:'resource_type'::text IS NULL OR a.resource_type = :'resource_type'::text)
  AND (:'actor_id'::text IS NULL OR a.actor_id = :'actor_id'::text)
  AND (:'created_from'::timestamptz IS NULL OR a.created_at >= :'created_from'::timestamptz)
  AND (:'created_to'::timestamptz IS NULL OR a.created_at < :'created_to'::timestamptz)
ORDER BY a.id DESC
LIMIT :'page_size'::integer;

-- name: get_audit_log :one
-- One entry, with the current ancestry path of its tenant (NULL: no tenant, or purged).
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at,
       t.ancestry_path
FROM audit_logs a
LEFT JOIN tenants t ON t.id = a.tenant_id
WHERE a.id = :'entry_id';

-- name: redact_audit_logs_of_tenants :value
-- Replace `changes` with the redaction marker on every entry that names a purged tenant
-- (tenant_ids, already deleted), through migration 0031's audit_redact_tenants (the only
-- way to change an entry); returns how many entries were redacted now.
SELECT audit_redact_tenants(:'tenant_ids'::uuid[]) AS redacted;
