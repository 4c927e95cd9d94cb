-- Lists of descendants (stream_descendants_json) put every listed tenant's document
-- together again on every read: at 1,000,000 tenants, of about 55 ms for 10,000 in psql,
-- the path index's range scan took 8 and the concatenation (about 30 operations per
-- row: casts, JSON escaping, three timestamps, each || a new copy) most of the rest.
-- Read from the row, the same 10,000 documents take about 15 ms (docs/performance.md,
-- "Descendants at 1,000,000 (round 5)"). Each tenant's row now carries its document's
-- text, written with the row, in two parts: the head, up to the path, and the tail,
-- after the config (which lives in config_entries). The path, the depth and the config
-- go between them when read; the path, the longest part, is not stored twice. Nothing
-- here changes a document's bytes.

-- 1. head || path || '","depth":' || depth || ',"config":' || config || tail is byte for
--    byte row_to_json of the tenant's tenant_documents row (stream_descendants_json puts
--    them together; tests/test_tenant_documents.py and tests/support/invariants.py
--    compare them). Put together by concatenation as tenant_document_texts did
--    (migration 0027, which stays for the replicas of the release before during a
--    rollout; nothing reads it any more): strings that may hold any character go through
--    to_json (JSON escaping, as row_to_json does); uuids, the path (uuids and slashes),
--    numbers, timestamps (svc_iso_time, UTC whatever the session's zone) and the
--    columns held to fixed words or the slug's pattern by tenants' CHECK constraints need
--    none; jsonb as its text. Keep in step with tenant_documents (and so with
--    tenant_json).
ALTER TABLE tenants
    ADD COLUMN document_head text,
    ADD COLUMN document_tail text;

-- 2. Written by a trigger before every insert and update of a row, whatever code writes
--    it (a COPY too), so that the parts never lag behind the columns they render; a
--    value written to them directly is replaced. A few µs per written row, which a write
--    of the row (a move: every row of the subtree) pays anyway.
CREATE FUNCTION render_tenant_document() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.document_head :=
        '{"id":"' || NEW.id::text
        || '","parent_id":' || coalesce('"' || NEW.parent_id::text || '"', 'null')
        || ',"name":' || to_json(NEW.name)::text
        || ',"slug":"' || NEW.slug
        || '","ancestry_path":"';
    NEW.document_tail :=
        ',"metadata":' || NEW.metadata::text
        || ',"isolation_strategy":"' || NEW.isolation_strategy
        || '","region":' || to_json(NEW.region)::text
        || ',"status":"' || NEW.status
        || '","deleted_at":' || coalesce('"' || svc_iso_time(NEW.deleted_at) || '"', 'null')
        || ',"created_at":"' || svc_iso_time(NEW.created_at)
        || '","updated_at":"' || svc_iso_time(NEW.updated_at)
        || '"}';
    RETURN NEW;
END;
$$;

CREATE TRIGGER tenants_render_document
    BEFORE INSERT OR UPDATE ON tenants
    FOR EACH ROW EXECUTE FUNCTION render_tenant_document();

-- 3. The rows there are now (the trigger writes the parts; the statement triggers of
--    tenants' updates see rows whose paths did not change). A rewrite of every row, which
--    holds their row locks until it commits (reads go on): at 1,000,000 tenants about 90
--    seconds, and the table's old row versions until the next vacuum (docs/operations.md).
UPDATE tenants SET document_head = NULL;

ALTER TABLE tenants
    ALTER COLUMN document_head SET NOT NULL,
    ALTER COLUMN document_tail SET NOT NULL;
