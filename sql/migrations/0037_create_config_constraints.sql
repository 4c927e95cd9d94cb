-- Constraints that live in the tree (docs/constraints.md): JSON Schemas a key's values
-- must satisfy at the declaring tenant and below, and budgets: the children's own values
-- of a key summing to at most the tenant's resolved value.

-- 1. Value schemas. All schemas on a tenant's path apply to the entries written at it;
--    enforce = false records an audit-only schema (writes go through, the violations
--    report lists what it would refuse). digest: sha256 of the canonical schema text,
--    the key of the compiled-validator cache.
CREATE TABLE config_schemas (
    tenant_id  uuid NOT NULL CONSTRAINT config_schemas_tenant_fk
                   REFERENCES tenants (id) ON DELETE CASCADE,
    key        text NOT NULL,
    schema     jsonb NOT NULL,
    digest     text NOT NULL,
    enforce    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT config_schemas_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT config_schemas_key_format CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.:-]{0,127}$')
);

-- 2. Budgets. The row is also the lock that allocations under the tenant take turns on
--    (FOR UPDATE), so writes under other parents never wait for each other.
CREATE TABLE config_budgets (
    tenant_id  uuid NOT NULL CONSTRAINT config_budgets_tenant_fk
                   REFERENCES tenants (id) ON DELETE CASCADE,
    key        text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT config_budgets_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT config_budgets_key_format CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.:-]{0,127}$')
);
-- "Which budgets of this key lie in this subtree?" starts from the key.
CREATE INDEX config_budgets_key_idx ON config_budgets (key, tenant_id);
