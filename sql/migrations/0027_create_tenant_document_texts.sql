-- Lists of thousands of tenants (stream_descendants_json) spent most of their time in
-- PostgreSQL rendering documents: at 1,000,000 tenants, of 77 to 109 ms for 10,000
-- descendants in psql, the path index's range scan took 6 to 9, the config subquery 20
-- to 45 (a bitmap scan of config_entries_pkey and an aggregate per tenant, entries or
-- not) and row_to_json about 32 (docs/performance.md, "Descendants at 1,000,000 (round
-- 4)"). Nothing here changes a document's bytes.

-- 1. tenant_details: the same columns and values. Its config subquery first asks the
--    primary key's index whether the tenant has an entry at all (an index-only probe
--    of one row; a scalar subquery, which the planner never turns into a hash of the
--    whole table as it may an EXISTS), and aggregates only then: most tenants have
--    none, and the probe costs about half of the bitmap scan and aggregate. (A count
--    of entries kept in the tenant's row would save the probe too, but the triggers
--    keeping it would update the tenant's row in every entry write, which the locking
--    protocol share-locks: docs/decisions.md.)
CREATE OR REPLACE VIEW tenant_details AS
SELECT t.id, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
       t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at, t.updated_at,
       CASE WHEN (SELECT true FROM config_entries held WHERE held.tenant_id = t.id LIMIT 1)
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
