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

-- One row per tenant whose columns ARE the document: names, order and values of
-- tenant_json's keys, so to_json(d) / json_agg(d) of a row d is the API's JSON (a row
-- keeps its column order, as json_build_object keeps its key order, and converts about
-- a fifth faster: no key argument to convert per row). uuids become strings, a NULL
-- parent_id or deleted_at becomes null, config (sensitive values already masked by
-- tenant_details) and metadata go in as stored. Filter and sort on the same columns
-- (ancestry_path keeps its "C" collation). Plain view, inlined like tenant_details.
-- Adding a column here adds a key to every list answer: keep it in step with tenant_json.
CREATE VIEW tenant_documents AS
SELECT td.id,
       td.parent_id,
       td.name,
       td.slug,
       td.ancestry_path,
       td.depth,
       td.config,
       td.metadata,
       td.isolation_strategy,
       td.region,
       td.status,
       svc_iso_time(td.deleted_at) AS deleted_at,
       svc_iso_time(td.created_at) AS created_at,
       svc_iso_time(td.updated_at) AS updated_at
FROM tenant_details td;
