-- Re-encrypting every stored secret under a new key (maintenance rotate-encryption-key).
-- Rows are read in keyset batches FOR UPDATE and rewritten in the same transaction, so
-- either every value moves to the new key or none does.

-- name: lock_sensitive_config_batch
-- The next batch of sensitive entries after ($1, $2) in key order, locked for update.
SELECT tenant_id, key, encrypted_value
FROM config_entries
WHERE sensitive
  AND ($1::uuid IS NULL OR (tenant_id, key) > ($1::uuid, $2::text))
ORDER BY tenant_id, key
LIMIT $3
FOR UPDATE;

-- name: update_config_ciphertexts
-- Store re-encrypted values from parallel arrays (tenant, key, ciphertext).
UPDATE config_entries ce
SET encrypted_value = u.encrypted_value
FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(tenant_id, key, encrypted_value)
WHERE ce.tenant_id = u.tenant_id
  AND ce.key = u.key
  AND ce.sensitive;

-- name: lock_webhook_secrets_batch
-- The next batch of webhooks after id $1 with their encrypted secrets, locked for update.
SELECT id, encrypted_secret, previous_encrypted_secret
FROM webhooks
WHERE $1::uuid IS NULL OR id > $1::uuid
ORDER BY id
LIMIT $2
FOR UPDATE;

-- name: update_webhook_ciphertexts
-- Store re-encrypted secrets from parallel arrays (id, secret, previous secret or NULL).
UPDATE webhooks w
SET encrypted_secret = u.encrypted_secret,
    previous_encrypted_secret = u.previous_encrypted_secret
FROM unnest($1::uuid[], $2::text[], $3::text[])
     AS u(id, encrypted_secret, previous_encrypted_secret)
WHERE w.id = u.id;
