-- Change requests and their reviews (migration 0043, docs/change-requests.md).

-- name: insert_change_request :one
-- A new change request.
INSERT INTO change_requests (id, title, description, changes, tenant_ids, state, author_id,
                             author_type, author_scope, author_scopes, apply_at, impact,
                             impact_digest)
VALUES (:'id', :'title', :'description', :'changes', :'tenant_ids'::uuid[], :'state',
        :'author_id', :'author_type', :'author_scope', :'author_scopes'::text[], :'apply_at',
        :'impact', :'impact_digest')
RETURNING id, title, description, changes, tenant_ids, state, author_id, author_type,
          author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
          approvals, approved_digest, revision, error, created_at, updated_at, applied_at;

-- name: get_change_request :one
-- One change request.
SELECT id, title, description, changes, tenant_ids, state, author_id, author_type,
       author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
       approvals, approved_digest, revision, error, created_at, updated_at, applied_at
FROM change_requests
WHERE id = :'id';

-- name: lock_change_request :one
-- One change request, locked for update until the transaction ends.
SELECT id, title, description, changes, tenant_ids, state, author_id, author_type,
       author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
       approvals, approved_digest, revision, error, created_at, updated_at, applied_at
FROM change_requests
WHERE id = :'id'
FOR UPDATE;

-- name: claim_due_change_request :one
-- The approved request whose apply_at passed longest ago (within the grace), locked;
-- a request another transaction holds is skipped (change_requests_due_idx).
SELECT id, title, description, changes, tenant_ids, state, author_id, author_type,
       author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
       approvals, approved_digest, revision, error, created_at, updated_at, applied_at
FROM change_requests
WHERE state = 'approved'
  AND apply_at <= now()
  AND apply_at >= now() - make_interval(secs => :'grace_seconds'::integer)
ORDER BY apply_at
LIMIT 1
FOR UPDATE SKIP LOCKED;

-- name: claim_missed_change_requests :many
-- Approved requests whose apply_at passed more than the grace ago (the service was
-- down), locked; requests another transaction holds are skipped.
SELECT id, title, description, changes, tenant_ids, state, author_id, author_type,
       author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
       approvals, approved_digest, revision, error, created_at, updated_at, applied_at
FROM change_requests
WHERE state = 'approved'
  AND apply_at < now() - make_interval(secs => :'grace_seconds'::integer)
ORDER BY apply_at
LIMIT 100
FOR UPDATE SKIP LOCKED;

-- name: update_change_request_state :one
-- Move a request to a state, with what that state carries.
UPDATE change_requests
SET state = :'state',
    impact = coalesce(:'impact', impact),
    impact_digest = coalesce(:'impact_digest', impact_digest),
    review_round = review_round + CASE WHEN :'next_round'::boolean THEN 1 ELSE 0 END,
    approvals = CASE WHEN :'next_round'::boolean THEN 0 ELSE :'approvals'::integer END,
    approved_digest = :'approved_digest',
    revision = coalesce(:'revision', revision),
    error = :'error',
    applied_at = CASE WHEN :'state' = 'applied' THEN now() ELSE applied_at END,
    updated_at = now()
WHERE id = :'id'
RETURNING id, title, description, changes, tenant_ids, state, author_id, author_type,
          author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
          approvals, approved_digest, revision, error, created_at, updated_at, applied_at;

-- name: set_change_request_revision :exec
-- The revision an applied request committed as (read after its commit).
UPDATE change_requests
SET revision = :'revision'
WHERE id = :'id';

-- name: insert_change_request_review :one
-- A reviewer's verdict in the current round; no row when it gave one already.
INSERT INTO change_request_reviews (change_request_id, review_round, reviewer_id,
                                    reviewer_type, verdict, comment)
VALUES (:'change_request_id', :'review_round', :'reviewer_id', :'reviewer_type',
        :'verdict', :'comment')
ON CONFLICT (change_request_id, review_round, reviewer_id) DO NOTHING
RETURNING reviewer_id;

-- name: list_change_request_reviews :many
-- A request's verdicts, oldest first.
SELECT review_round, reviewer_id, reviewer_type, verdict, comment, created_at
FROM change_request_reviews
WHERE change_request_id = :'change_request_id'
ORDER BY created_at, reviewer_id;

-- name: list_change_requests :many
-- One keyset page, newest first: requests after the cursor id, of the state and author
-- (NULL: any), and for a scoped caller (scope_id not NULL) only those whose tenants
-- all lie in its subtree. change_requests_pkey backwards, or the state / author index.
SELECT id, title, description, changes, tenant_ids, state, author_id, author_type,
       author_scope, author_scopes, apply_at, impact, impact_digest, review_round,
       approvals, approved_digest, revision, error, created_at, updated_at, applied_at
FROM change_requests cr
WHERE (:'cursor'::uuid IS NULL OR cr.id < :'cursor'::uuid)
  AND (:'state'::text IS NULL OR cr.state = :'state'::text)
  AND (:'author_id'::text IS NULL OR cr.author_id = :'author_id'::text)
  AND (:'scope_id'::text IS NULL OR NOT EXISTS (
          SELECT 1
          FROM unnest(cr.tenant_ids) AS x(id)
          LEFT JOIN tenants t ON t.id = x.id
          WHERE t.id IS NULL
             OR strpos(t.ancestry_path, '/' || :'scope_id'::text) = 0))
ORDER BY cr.id DESC
LIMIT :'page_size'::integer;

-- name: list_subtree_tenant_ids :many
-- The tenants at or below any of these tenants (each once), up to max_rows: the
-- candidates whose context a change request may change. One range of the "C" path
-- index per tenant.
SELECT DISTINCT t.id
FROM tenants x
JOIN tenants t ON t.ancestry_path >= x.ancestry_path
              AND t.ancestry_path < x.ancestry_path || '0'
WHERE x.id = ANY(:'tenant_ids'::uuid[])
LIMIT :'max_rows'::integer;

-- name: find_applied_revision :value
-- The revision whose audit entries hold the request's change_request.applied entry
-- (NULL: the apply changed no tenant). Newest revisions first.
SELECT r.revision
FROM context_revisions r
JOIN audit_logs a ON a.id = ANY(r.audit_ids)
WHERE a.resource_type = 'change_request'
  AND a.resource_id = :'id'
  AND a.action = 'change_request.applied'
ORDER BY r.revision DESC
LIMIT 1;
