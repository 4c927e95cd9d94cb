-- Queries of the benchmark baselines (bench/baselines.py): the floor a service read is
-- measured against, so it reads one row and nothing the service's reads add on top.

-- name: get_tenant_row :one
-- One tenants row by primary key, no join, no config: the cheapest database answer.
SELECT id, parent_id, name, slug, ancestry_path, depth, metadata,
       isolation_strategy, region, status, deleted_at, created_at, updated_at
FROM tenants
WHERE id = :'tenant_id';
