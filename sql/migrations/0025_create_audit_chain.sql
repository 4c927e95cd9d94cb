-- The tamper-evident audit log (docs/security.md "Audit chain"). Every audit entry gets
-- one link in a single global hash chain, written when its transaction commits:
--   entry_hash = sha256(prev_hash || canonical(entry))
-- where canonical(entry) is audit_chain_canonical() below and prev_hash is the entry_hash
-- of the link before (32 zero bytes before the first). `changes` enters the hash only
-- through changes_digest, so a GDPR redaction (which replaces `changes`) keeps the chain
-- verifiable. The links live beside the entries, so audit_logs itself stays append-only.

CREATE TABLE audit_chain (
    seq            bigint PRIMARY KEY,
    -- No foreign key: retention removes an entry first and its link later, if ever
    -- (verification counts such links as purged).
    entry_id       uuid NOT NULL CONSTRAINT audit_chain_entry_key UNIQUE,
    changes_digest bytea NOT NULL,
    prev_hash      bytea NOT NULL,
    entry_hash     bytea NOT NULL
);

-- The bytes hashed for one entry: a JSON array (PostgreSQL's json text form: ", "
-- separators, strings escaped as JSON requires, nothing else escaped) of a version tag,
-- the link's number, the entry's fields in table order except `changes`, the creation
-- instant in microseconds since the Unix epoch, and the hex digest of `changes`.
CREATE FUNCTION audit_chain_canonical(seq bigint, e audit_logs, changes_digest bytea)
RETURNS bytea
LANGUAGE sql IMMUTABLE
AS $$
    SELECT convert_to(json_build_array(
        'audit-chain-v1', seq, e.id::text, e.tenant_id::text, e.actor_id, e.actor_type,
        e.action, e.resource_type, e.resource_id, e.request_id, e.ip_address,
        (extract(epoch FROM e.created_at) * 1000000)::bigint, encode(changes_digest, 'hex')
    )::text, 'UTF8')
$$;

-- sha256 of `changes` in jsonb's text form ('null' for none).
CREATE FUNCTION audit_changes_digest(changes jsonb) RETURNS bytea
LANGUAGE sql IMMUTABLE
AS $$
    SELECT sha256(convert_to(coalesce(changes::text, 'null'), 'UTF8'))
$$;

-- Append the link of one entry after the newest. The advisory lock (taken once per
-- transaction, held until it ends) makes the writers append one at a time; a READ
-- COMMITTED statement after it sees the link the previous holder committed. A writer
-- in an older snapshot (REPEATABLE READ, the GDPR export) may pick a number already
-- taken: it fails with a serialization failure, which the service retries, and the
-- chain never forks.
CREATE FUNCTION audit_chain_link(e audit_logs) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    link_seq  bigint;
    prev      bytea;
    digest    bytea := audit_changes_digest(e.changes);
BEGIN
    PERFORM pg_advisory_xact_lock(7310452118900025);
    SELECT c.seq + 1, c.entry_hash INTO link_seq, prev
    FROM audit_chain c
    ORDER BY c.seq DESC
    LIMIT 1;
    IF NOT FOUND THEN  -- the first link follows 32 zero bytes
        link_seq := 1;
        prev := '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
    END IF;
    INSERT INTO audit_chain (seq, entry_id, changes_digest, prev_hash, entry_hash)
    VALUES (link_seq, e.id, digest, prev,
            sha256(prev || audit_chain_canonical(link_seq, e, digest)))
    ON CONFLICT (seq) DO NOTHING;
    IF NOT FOUND THEN
        -- An older snapshot (REPEATABLE READ) missed a newer link: run the change again.
        RAISE EXCEPTION 'the audit chain moved on since this transaction''s snapshot'
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;

-- Link each new entry at commit (a deferred constraint trigger), after every other
-- statement of the transaction: the chain lock is the last lock a writer takes and is
-- held only for its commit, so no lock order with tree locks can deadlock on it.
CREATE FUNCTION audit_logs_chain() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM audit_chain_link(NEW);
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER audit_logs_chain
    AFTER INSERT ON audit_logs
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION audit_logs_chain();

-- Links are append-only too; retention may delete the links up to and including the
-- number it set for its own transaction (tenant_service.audit_chain_cut). It always
-- keeps the newest link, which the next one chains to.
CREATE FUNCTION audit_chain_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    cut text := nullif(current_setting('tenant_service.audit_chain_cut', true), '');
BEGIN
    IF TG_OP = 'DELETE' AND cut IS NOT NULL AND OLD.seq <= cut::bigint THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit chain links cannot be changed or deleted (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_chain_append_only
    BEFORE UPDATE OR DELETE ON audit_chain
    FOR EACH ROW EXECUTE FUNCTION audit_chain_guard();

CREATE TRIGGER audit_chain_no_truncate
    BEFORE TRUNCATE ON audit_chain
    FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_truncate();

-- Entries written before this migration join the chain in id (time) order.
DO $$
DECLARE
    e audit_logs;
BEGIN
    FOR e IN SELECT * FROM audit_logs ORDER BY id LOOP
        PERFORM audit_chain_link(e);
    END LOOP;
END
$$;
