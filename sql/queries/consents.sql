-- Consent records: one row per grant, kept after revocation. Reads go through the
-- consent_records view, which derives status (granted, revoked, expired) from the clock.

-- name: lock_consent_purpose
-- Serialize grants and revocations of one tenant's purpose until the transaction ends,
-- so two concurrent grants cannot both create an active record.
SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/' || $2::text, 7310452118900003));

-- name: get_active_consent
-- The tenant's active (granted, not expired) record for a purpose, if any.
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.tenant_id = $1
  AND cr.purpose = $2
  AND cr.status = 'granted'
ORDER BY cr.id DESC
LIMIT 1;

-- name: get_consent
-- One record by id.
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.id = $1;

-- name: insert_consent
-- Record a grant.
INSERT INTO consents (id, tenant_id, purpose, granted_by, expires_at, metadata)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: list_consents
-- A tenant's records, newest first, optionally for one purpose ($2).
SELECT cr.id, cr.tenant_id, cr.purpose, cr.status, cr.granted_at, cr.granted_by,
       cr.revoked_at, cr.revoked_by, cr.expires_at, cr.metadata
FROM consent_records cr
WHERE cr.tenant_id = $1
  AND ($2::text IS NULL OR cr.purpose = $2::text)
ORDER BY cr.id DESC;

-- name: revoke_consent
-- Mark a record revoked by actor $2; the record itself is kept.
UPDATE consents
SET revoked_at = now(), revoked_by = $2
WHERE id = $1
  AND revoked_at IS NULL;
