-- API keys (only their HMAC is stored) and roles, named bundles of scopes.

CREATE TABLE roles (
    id          uuid PRIMARY KEY,
    tenant_id   uuid CONSTRAINT roles_tenant_fk REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT roles_name_length CHECK (char_length(name) BETWEEN 1 AND 100),
    CONSTRAINT roles_scopes_check CHECK (scopes <@ ARRAY['read', 'write', 'admin']::text[])
);
-- A role name is unique within its scope: among global roles, or within one tenant.
CREATE UNIQUE INDEX roles_name_key
    ON roles (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name));

CREATE TABLE api_keys (
    id                        uuid PRIMARY KEY,
    tenant_id                 uuid CONSTRAINT api_keys_tenant_fk
                                  REFERENCES tenants (id) ON DELETE CASCADE,
    name                      text NOT NULL,
    prefix                    text NOT NULL,
    key_hash                  bytea NOT NULL,
    environment               text NOT NULL DEFAULT 'live',
    scopes                    text[] NOT NULL DEFAULT ARRAY['read']::text[],
    role_id                   uuid CONSTRAINT api_keys_role_fk REFERENCES roles (id) ON DELETE SET NULL,
    rate_limit_max            integer,
    rate_limit_window         text,
    rate_limit_window_seconds integer,
    created_at                timestamptz NOT NULL DEFAULT now(),
    last_used_at              timestamptz,
    expires_at                timestamptz,
    revoked_at                timestamptz,
    rotated_from              uuid CONSTRAINT api_keys_rotated_from_fk
                                  REFERENCES api_keys (id) ON DELETE SET NULL,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
    CONSTRAINT api_keys_name_length CHECK (char_length(name) BETWEEN 1 AND 255),
    CONSTRAINT api_keys_environment_check CHECK (environment IN ('live', 'test')),
    CONSTRAINT api_keys_scopes_check CHECK (scopes <@ ARRAY['read', 'write', 'admin']::text[]),
    CONSTRAINT api_keys_rate_limit_max_check CHECK (rate_limit_max BETWEEN 1 AND 100000),
    CONSTRAINT api_keys_rate_limit_window_check
        CHECK ((rate_limit_window IS NULL) = (rate_limit_window_seconds IS NULL))
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, id);
CREATE INDEX api_keys_role_idx ON api_keys (role_id) WHERE role_id IS NOT NULL;
