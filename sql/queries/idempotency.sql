-- Idempotency-Key records (migration 0013). A record is valid for 24 hours after it was
-- written; older ones are ignored by reads, replaced by writes and removed by retention.

-- name: lock_idempotency_key
-- Try to take the transaction lock of one key ($1: the first 8 bytes of its hash); false
-- while another transaction (the same request, sent again) holds it.
SELECT pg_try_advisory_xact_lock($1::bigint) AS locked;

-- name: get_idempotency_key
-- The record of key hash $1 written in the last 24 hours, if any.
SELECT id, request_hash, status, answer, created_at
FROM idempotency_keys
WHERE key_hash = $1
  AND created_at > now() - interval '24 hours';

-- name: insert_idempotency_key
-- Store the first answer for key hash $2; an expired record of the same key is replaced,
-- a live one (written meanwhile by a concurrent request) is kept. Returns whether stored.
INSERT INTO idempotency_keys AS k (id, key_hash, request_hash, status, answer, mentioned_ids)
VALUES ($1, $2, $3, $4, $5, $6::uuid[])
ON CONFLICT (key_hash) DO UPDATE
SET id = excluded.id,
    request_hash = excluded.request_hash,
    status = excluded.status,
    answer = excluded.answer,
    mentioned_ids = excluded.mentioned_ids,
    created_at = now()
WHERE k.created_at <= now() - interval '24 hours'
RETURNING k.id;

-- name: delete_idempotency_keys_of_tenants
-- GDPR purge: every stored answer that names one of the tenants $1.
DELETE FROM idempotency_keys
WHERE mentioned_ids && $1::uuid[];

-- name: lock_idempotency_answers_batch
-- Encryption-key rotation: the next batch of stored answers after id $1, locked.
SELECT id, key_hash, answer
FROM idempotency_keys
WHERE $1::uuid IS NULL OR id > $1::uuid
ORDER BY id
LIMIT $2
FOR UPDATE;

-- name: update_idempotency_answers
-- Encryption-key rotation: store re-encrypted answers from parallel arrays (id, answer).
UPDATE idempotency_keys k
SET answer = u.answer
FROM unnest($1::uuid[], $2::text[]) AS u(id, answer)
WHERE k.id = u.id;
