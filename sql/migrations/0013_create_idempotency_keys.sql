-- Stored answers of POST requests sent with an Idempotency-Key (Stripe semantics): the
-- same key and request within 24 hours replays the first answer instead of running
-- again. A row is written in the same transaction as the change it answers, so a
-- committed change always has its stored answer.
--
-- Nothing the client chose is kept in clear: key_hash is SHA-256 of the caller and the
-- key, request_hash SHA-256 of the request, and the answer is AES-256-GCM encrypted
-- (it may hold tenant data or, for API-key creation, a plaintext key).
-- mentioned_ids lists every UUID the answer names, so a GDPR purge can delete the
-- answers that carry a purged tenant.

CREATE TABLE idempotency_keys (
    id            uuid PRIMARY KEY,
    key_hash      bytea NOT NULL CONSTRAINT idempotency_keys_key_hash_key UNIQUE,
    request_hash  bytea NOT NULL,
    status        integer NOT NULL,
    answer        text NOT NULL,
    mentioned_ids uuid[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_keys_hash_lengths
        CHECK (octet_length(key_hash) = 32 AND octet_length(request_hash) = 32),
    CONSTRAINT idempotency_keys_status_range CHECK (status BETWEEN 200 AND 299)
);
-- Retention: records older than 24 hours, oldest first.
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at, id);
-- GDPR purge: answers naming any of the purged tenants.
CREATE INDEX idempotency_keys_mentioned_idx ON idempotency_keys USING gin (mentioned_ids);
