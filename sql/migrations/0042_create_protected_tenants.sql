-- Protected subtrees (docs/change-requests.md): direct writes at a protected tenant or
-- below are refused; changes there go through change requests. A table of its own, not
-- a tenants column, so the tenant document and its triggers stay as they are.
CREATE TABLE protected_tenants (
    tenant_id    uuid PRIMARY KEY CONSTRAINT protected_tenants_tenant_fk
                     REFERENCES tenants (id) ON DELETE CASCADE,
    protected_at timestamptz NOT NULL DEFAULT now(),
    protected_by text NOT NULL
);
