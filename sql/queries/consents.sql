-- Consent records: one row per grant, kept after revocation. Reads go through the
-- consent_records view, which derives status (granted, revoked, expired) from the clock.

-- name: lock_consent_purpose :exec
-- Serialize grants and revocations of one tenant's purpose until the transaction ends,
-- so two concurrent grants cannot both create an active record.
SELECT pg_advisory_xact_lock(
    hashtextextended(:'tenant_id'::text || '/' || :'purpose'::text, 7310452118900003));

-- name: get_active_consent :one
-- The tenant's active (granted, not expired) record for a purpose, if any.
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.tenant_id = :'tenant_id'
  AND cr.purpose = :'purpose'
  AND cr.status = 'granted'
ORDER BY cr.id DESC
LIMIT 1;

-- name: get_consent :one
-- One record by id.
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.id = :'consent_id';

-- name: insert_consent :exec
-- Record a grant.
INSERT INTO consents (id, tenant_id, purpose, granted_by, expires_at, metadata)
VALUES (:'consent_id', :'tenant_id', :'purpose', :'granted_by', :'expires_at', :'metadata');

-- name: list_consents :many
-- A tenant's records, newest first, optionally for one purpose (NULL: all).
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.tenant_id = :'tenant_id'
  AND (:'purpose'::text IS NULL OR cr.purpose = :'purpose'::text)
ORDER BY cr.id DESC;

-- name: revoke_consent :exec
-- Mark a record revoked by actor revoked_by; the record itself is kept.
UPDATE consents
SET revoked_at = now(), revoked_by = :'revoked_by'
WHERE id = :'consent_id'
  AND revoked_at IS NULL;
