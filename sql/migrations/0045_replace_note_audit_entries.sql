-- Audit entries written by the audit owner role (migration 0031: the audit.purged
-- checkpoint of audit_purge_batch, inside its SECURITY DEFINER function) are not noted
-- for the revision log (migration 0033). That role may not write the notes, and a
-- deferred trigger queued by it would run the commit of the revision as that role; its
-- transactions change no tenant, so they get no revision to link the entry to anyway.
CREATE OR REPLACE FUNCTION note_audit_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_user = 'tenant_service_audit' THEN
        RETURN NULL;
    END IF;
    INSERT INTO context_change_pending (xid, what, audit_id)
    SELECT pg_current_xact_id(), 'a', n.id FROM new_rows n;
    IF FOUND THEN
        PERFORM note_context_change_mark();
    END IF;
    RETURN NULL;
END;
$$;
