-- The audit owner role (migration 0031) writes audit entries inside its functions
-- (retention's audit.purged checkpoints), and every audit entry is noted for the
-- revision log (migration 0033): its triggers then run as that role (and, on PostgreSQL
-- 18, so does the commit trigger it queued), so it needs the revision log's bookkeeping
-- tables. Nothing else: it still cannot change tenants or entries.
GRANT SELECT, INSERT, DELETE ON context_change_pending TO tenant_service_audit;
GRANT SELECT, INSERT, DELETE ON context_change_marks TO tenant_service_audit;
GRANT SELECT, INSERT, UPDATE ON context_revisions TO tenant_service_audit;
GRANT SELECT, INSERT ON context_revision_tenants TO tenant_service_audit;
GRANT SELECT ON tenant_closure TO tenant_service_audit;
GRANT USAGE, SELECT ON SEQUENCE context_revision_seq TO tenant_service_audit;
