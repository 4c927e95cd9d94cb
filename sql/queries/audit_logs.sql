-- The audit log: newest first (ids are UUIDv7, so id order is time order). Entries are
-- append-only; a trigger (migration 0009) refuses changes outside the two paths below
-- that open it for their own transaction: GDPR redaction and retention.

-- name: list_audit_logs
-- One page of the whole log, newest first, before cursor $1, with optional filters.
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM audit_logs a
WHERE a.id < coalesce($1::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND ($2::text IS NULL OR a.action = $2::text)
  AND ($3::text IS NULL OR a.resource_type = $3::text)
  AND ($4::text IS NULL OR a.actor_id = $4::text)
  AND ($5::timestamptz IS NULL OR a.created_at >= $5::timestamptz)
  AND ($6::timestamptz IS NULL OR a.created_at < $6::timestamptz)
ORDER BY a.id DESC
LIMIT $7;

-- name: list_tenant_audit_logs
-- One page of one tenant's entries ($8), newest first, driven by (tenant_id, id); $7 NULL
-- means every entry (the GDPR export).
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM audit_logs a
WHERE a.tenant_id = $8::uuid
  AND a.id < coalesce($1::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND ($2::text IS NULL OR a.action = $2::text)
  AND ($3::text IS NULL OR a.resource_type = $3::text)
  AND ($4::text IS NULL OR a.actor_id = $4::text)
  AND ($5::timestamptz IS NULL OR a.created_at >= $5::timestamptz)
  AND ($6::timestamptz IS NULL OR a.created_at < $6::timestamptz)
ORDER BY a.id DESC
LIMIT $7;

-- name: list_subtree_audit_logs
-- One page of the entries of every tenant in $8's subtree (a tenant-scoped caller),
-- newest first; entries without a tenant are not part of any subtree.
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at
FROM tenant_closure c
JOIN audit_logs a ON a.tenant_id = c.descendant_id
WHERE c.ancestor_id = $8::uuid
  AND a.id < coalesce($1::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND ($2::text IS NULL OR a.action = $2::text)
  AND ($3::text IS NULL OR a.resource_type = $3::text)
  AND ($4::text IS NULL OR a.actor_id = $4::text)
  AND ($5::timestamptz IS NULL OR a.created_at >= $5::timestamptz)
  AND ($6::timestamptz IS NULL OR a.created_at < $6::timestamptz)
ORDER BY a.id DESC
LIMIT $7;

-- name: get_audit_log
-- One entry, with the current ancestry path of its tenant (NULL: no tenant, or purged).
SELECT a.id, a.tenant_id, a.actor_id, a.actor_type, a.action, a.resource_type,
       a.resource_id, a.changes, a.request_id, a.ip_address, a.created_at,
       t.ancestry_path
FROM audit_logs a
LEFT JOIN tenants t ON t.id = a.tenant_id
WHERE a.id = $1;

-- name: allow_audit_redaction
-- Open the audit guard for redaction until this transaction ends.
SELECT set_config('tenant_service.audit_redaction', 'on', true);

-- name: redact_audit_logs_of_tenants
-- Replace `changes` with the redaction marker on every entry that names a purged tenant
-- ($1 ids): entries of those tenants, entries about them, and entries of other tenants
-- whose changes mention one (a child moved out earlier names its old parent). Returns
-- how many entries were redacted now.
WITH purged AS (
    SELECT unnest($1::uuid[]) AS id
),
redacted AS (
    UPDATE audit_logs a
    SET changes = '{"redacted": true}'::jsonb
    WHERE a.changes IS DISTINCT FROM '{"redacted": true}'::jsonb
      AND (a.tenant_id IN (SELECT id FROM purged)
           OR a.resource_id IN (SELECT id::text FROM purged)
           -- any UUID written in the changes that is one of the purged tenants
           OR EXISTS (SELECT 1
                      FROM regexp_matches(a.changes::text,
                                          '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}',
                                          'g') AS m(found)
                      WHERE m.found[1]::uuid IN (SELECT id FROM purged)))
    RETURNING 1
)
SELECT count(*) AS redacted
FROM redacted;
