-- Lists of thousands of tenants (stream_descendants_json) spent most of their time in
-- PostgreSQL rendering documents: at 1,000,000 tenants, of about 80 ms for 10,000
-- descendants, the path index's range scan took 6, the config subquery 20 to 35 (a
-- bitmap scan of config_entries_pkey per tenant, entries or not: migration 0027) and
-- row_to_json about 30 (docs/performance.md, "Descendants at 1,000,000 (round 4)").
-- Nothing here changes a document's bytes.

-- 1. tenant_details: the same columns and values. A tenant's entries are aggregated only
--    when it has some (tenants.config_entry_count, migration 0027), instead of a probe
--    of config_entries_pkey for every tenant read.
CREATE OR REPLACE VIEW tenant_details AS
SELECT t.id, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
       t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at, t.updated_at,
       CASE WHEN t.config_entry_count > 0
            THEN coalesce((SELECT jsonb_object_agg(ce.key,
                                                   CASE WHEN ce.sensitive
                                                        THEN to_jsonb('***'::text)
                                                        ELSE ce.value END)
                           FROM config_entries ce
                           WHERE ce.tenant_id = t.id), '{}'::jsonb)
            ELSE '{}'::jsonb
       END AS config
FROM tenants t;

-- 2. A tenant's document as JSON text, byte for byte row_to_json of its tenant_documents
--    row (tests/test_tenant_documents.py compares them), put together by concatenation:
--    row_to_json looks up every column's type and output function again for every row
--    (14 columns), which was most of its cost. Strings that may hold any character go
--    through to_json (JSON escaping, as row_to_json does); uuids, the path (uuids and
--    slashes), numbers, timestamps (svc_iso_time) and the columns held to fixed words or
--    the slug's pattern by tenants' CHECK constraints need none. jsonb as its text.
--    Keep in step with tenant_documents (and so with tenant_json). Filter and sort on
--    the plain columns beside it, as on tenant_documents'.
CREATE VIEW tenant_document_texts AS
SELECT td.id,
       td.ancestry_path,
       td.depth,
       td.status,
       '{"id":"' || td.id::text
       || '","parent_id":' || coalesce('"' || td.parent_id::text || '"', 'null')
       || ',"name":' || to_json(td.name)::text
       || ',"slug":"' || td.slug
       || '","ancestry_path":"' || td.ancestry_path
       || '","depth":' || td.depth::text
       || ',"config":' || td.config::text
       || ',"metadata":' || td.metadata::text
       || ',"isolation_strategy":"' || td.isolation_strategy
       || '","region":' || to_json(td.region)::text
       || ',"status":"' || td.status
       || '","deleted_at":' || coalesce('"' || svc_iso_time(td.deleted_at) || '"', 'null')
       || ',"created_at":"' || svc_iso_time(td.created_at)
       || '","updated_at":"' || svc_iso_time(td.updated_at)
       || '"}' AS document
FROM tenant_details td;
