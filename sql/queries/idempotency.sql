-- Idempotency-Key records (migration 0013). A record is valid for 24 hours after it was
-- written; older ones are ignored by reads, replaced by writes and removed by retention.

-- name: lock_idempotency_key :value
-- Try to take the transaction lock of one key (lock_id: the first 8 bytes of its hash);
-- false while another transaction (the same request, sent again) holds it.
SELECT pg_try_advisory_xact_lock(:'lock_id'::bigint) AS locked;

-- name: get_idempotency_key :one
-- The record of key hash key_hash written in the last 24 hours, if any.
SELECT id, request_hash, status, answer, created_at
FROM idempotency_keys
WHERE key_hash = :'key_hash'
  AND created_at > now() - interval '24 hours';

-- name: insert_idempotency_key :value
-- Store the first answer for key_hash; an expired record of the same key is replaced, a
-- live one (written meanwhile by a concurrent request) is kept. Returns whether stored.
INSERT INTO idempotency_keys AS k
            (id, key_hash, request_hash, status, answer, mentioned_ids)
VALUES (:'record_id', :'key_hash', :'request_hash', :'status', :'answer',
        :'mentioned_ids'::uuid[])
ON CONFLICT (key_hash) DO UPDATE
SET id = excluded.id,
    request_hash = excluded.request_hash,
    status = excluded.status,
    answer = excluded.answer,
    mentioned_ids = excluded.mentioned_ids,
    created_at = now()
WHERE k.created_at <= now() - interval '24 hours'
RETURNING k.id;

-- name: delete_idempotency_keys_of_tenants :exec
-- GDPR purge: every stored answer that names one of the tenant_ids.
DELETE FROM idempotency_keys
WHERE mentioned_ids && :'tenant_ids'::uuid[];

-- name: lock_idempotency_answers_batch :many
-- Encryption-key rotation: the next batch of stored answers after after_id (NULL: the
-- first batch), locked.
SELECT id, key_hash, answer
FROM idempotency_keys
WHERE :'after_id'::uuid IS NULL OR id > :'after_id'::uuid
ORDER BY id
LIMIT :'batch_size'::integer
FOR UPDATE;

-- name: update_idempotency_answers :exec
-- Encryption-key rotation: store re-encrypted answers from parallel arrays (id, answer).
UPDATE idempotency_keys k
SET answer = u.answer
FROM unnest(:'record_ids'::uuid[], :'answers'::text[]) AS u(id, answer)
WHERE k.id = u.id;
