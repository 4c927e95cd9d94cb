-- Re-encrypting every stored secret under a new key (maintenance rotate-encryption-key).
-- Rows are read in keyset batches FOR UPDATE and rewritten in the same transaction, so
-- either every value moves to the new key or none does.

-- name: lock_sensitive_config_batch :many
-- The next batch of sensitive entries after (after_tenant_id, after_key) in key order
-- (after_tenant_id NULL: the first batch), locked for update.
SELECT tenant_id, key, encrypted_value
FROM config_entries
WHERE sensitive
  AND (:'after_tenant_id'::uuid IS NULL
       OR (tenant_id, key) > (:'after_tenant_id'::uuid, :'after_key'::text))
ORDER BY tenant_id, key
LIMIT :'batch_size'::integer
FOR UPDATE;

-- name: update_config_ciphertexts :exec
-- Store re-encrypted values from parallel arrays (tenant, key, ciphertext).
UPDATE config_entries ce
SET encrypted_value = u.encrypted_value
FROM unnest(:'tenant_ids'::uuid[], :'keys'::text[], :'encrypted_values'::text[])
     AS u(tenant_id, key, encrypted_value)
WHERE ce.tenant_id = u.tenant_id
  AND ce.key = u.key
  AND ce.sensitive;

-- name: lock_webhook_secrets_batch :many
-- The next batch of webhooks after after_id (NULL: the first batch) with their encrypted
-- secrets, locked for update.
SELECT id, encrypted_secret, previous_encrypted_secret
FROM webhooks
WHERE :'after_id'::uuid IS NULL OR id > :'after_id'::uuid
ORDER BY id
LIMIT :'batch_size'::integer
FOR UPDATE;

-- name: update_webhook_ciphertexts :exec
-- Store re-encrypted secrets from parallel arrays (id, secret, previous secret or NULL).
UPDATE webhooks w
SET encrypted_secret = u.encrypted_secret,
    previous_encrypted_secret = u.previous_encrypted_secret
FROM unnest(:'webhook_ids'::uuid[], :'encrypted_secrets'::text[],
            :'previous_encrypted_secrets'::text[])
     AS u(id, encrypted_secret, previous_encrypted_secret)
WHERE w.id = u.id;
