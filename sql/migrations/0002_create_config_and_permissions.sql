-- A tenant's own config entries and permission policies; inheritance is resolved at
-- read time through tenant_closure (sql/queries/context.sql).

CREATE TABLE config_entries (
    tenant_id       uuid NOT NULL CONSTRAINT config_entries_tenant_fk
                        REFERENCES tenants (id) ON DELETE CASCADE,
    key             text NOT NULL,
    -- Plain values live in value; sensitive ones only as v1:<iv>:<tag>:<ciphertext>.
    value           jsonb,
    encrypted_value text,
    locked          boolean NOT NULL DEFAULT false,
    sensitive       boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT config_entries_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT config_entries_key_format CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT config_entries_value_storage CHECK (
        (sensitive AND value IS NULL AND encrypted_value IS NOT NULL)
        OR (NOT sensitive AND value IS NOT NULL AND encrypted_value IS NULL))
);
-- "Has an ancestor locked this key?" reads only locked entries.
CREATE INDEX config_entries_locked_idx ON config_entries (key, tenant_id) WHERE locked;

CREATE TABLE permission_policies (
    tenant_id  uuid NOT NULL CONSTRAINT permission_policies_tenant_fk
                   REFERENCES tenants (id) ON DELETE CASCADE,
    key        text NOT NULL,
    value      boolean NOT NULL,
    mode       text NOT NULL DEFAULT 'INHERIT',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT permission_policies_pkey PRIMARY KEY (tenant_id, key),
    CONSTRAINT permission_policies_key_format CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT permission_policies_mode_check CHECK (mode IN ('INHERIT', 'LOCKED', 'LOCAL'))
);
CREATE INDEX permission_policies_locked_idx ON permission_policies (key, tenant_id)
    WHERE mode = 'LOCKED';

-- A tenant as the API shows it: its columns plus its own config entries as an object,
-- sensitive values masked. Plain view, inlined by the planner into every query.
CREATE VIEW tenant_details AS
SELECT t.id, t.parent_id, t.name, t.slug, t.ancestry_path, t.depth, t.metadata,
       t.isolation_strategy, t.region, t.status, t.deleted_at, t.created_at, t.updated_at,
       coalesce((SELECT jsonb_object_agg(ce.key,
                                         CASE WHEN ce.sensitive THEN to_jsonb('***'::text)
                                              ELSE ce.value END)
                 FROM config_entries ce
                 WHERE ce.tenant_id = t.id), '{}'::jsonb) AS config
FROM tenants t;
