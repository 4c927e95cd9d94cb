-- A tenant's JSON document, rendered by PostgreSQL exactly as the API shows it
-- (service/representations.py tenant_json), so that big lists leave the database as one
-- JSON text instead of thousands of records decoded, rebuilt and encoded again in Python.

-- A timestamp as service/timefmt.py iso() writes it: UTC, milliseconds, Z. to_char's MS
-- truncates the microseconds (it never rounds), as iso() does. A plain SQL function so
-- the planner inlines it; STABLE because to_char is.
CREATE FUNCTION svc_iso_time(value timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT to_char(value AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- tenant_details plus its document. json_build_object keeps the keys in tenant_json's
-- order; uuids become strings, a NULL parent_id or deleted_at becomes null, and config
-- (sensitive values already masked by tenant_details) and metadata go in as they are
-- stored. The tree columns stay beside the document for filtering and ordering. Plain
-- view, inlined by the planner like tenant_details.
CREATE VIEW tenant_documents AS
SELECT td.id, td.parent_id, td.ancestry_path, td.depth, td.status,
       json_build_object(
           'id', td.id,
           'parent_id', td.parent_id,
           'name', td.name,
           'slug', td.slug,
           'ancestry_path', td.ancestry_path,
           'depth', td.depth,
           'config', td.config,
           'metadata', td.metadata,
           'isolation_strategy', td.isolation_strategy,
           'region', td.region,
           'status', td.status,
           'deleted_at', svc_iso_time(td.deleted_at),
           'created_at', svc_iso_time(td.created_at),
           'updated_at', svc_iso_time(td.updated_at)
       ) AS document
FROM tenant_details td;
