-- Change requests (docs/change-requests.md): an ordered list of changes, reviewed,
-- approved by someone other than its author and applied in one transaction, at once or
-- at apply_at. The scheduler of every process claims due requests with FOR UPDATE SKIP
-- LOCKED and applies each in the transaction that holds its row, so a request applies
-- once however many processes run, and one missed while the service was down applies
-- at the next start (or fails, past CHANGE_REQUEST_APPLY_GRACE).
CREATE TABLE change_requests (
    id             uuid PRIMARY KEY,
    title          text NOT NULL,
    description    text NOT NULL DEFAULT '',
    changes        jsonb NOT NULL,
    -- Every tenant a change names (tenant_id, new_parent_id): who may see and approve.
    tenant_ids     uuid[] NOT NULL,
    state          text NOT NULL,
    author_id      text NOT NULL,
    author_type    text NOT NULL,
    -- The author's subtree and scopes: the changes apply as the author could make them.
    author_scope   uuid,
    author_scopes  text[] NOT NULL,
    apply_at       timestamptz,
    impact         jsonb NOT NULL,
    impact_digest  text NOT NULL,
    -- Approvals count within one round; a drift starts the next.
    review_round   integer NOT NULL DEFAULT 1,
    approvals      integer NOT NULL DEFAULT 0,
    approved_digest text,
    revision       bigint,
    error          jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    applied_at     timestamptz,
    CONSTRAINT change_requests_state_check CHECK (state IN (
        'draft', 'pending_approval', 'approved', 'rejected', 'cancelled', 'applied', 'failed'))
);
-- Lists, newest first (keyset on id: ids are time-ordered UUIDv7).
CREATE INDEX change_requests_state_idx ON change_requests (state, id);
CREATE INDEX change_requests_author_idx ON change_requests (author_id, id);
-- The scheduler's claim: approved requests by apply_at.
CREATE INDEX change_requests_due_idx ON change_requests (apply_at)
    WHERE state = 'approved' AND apply_at IS NOT NULL;

-- One verdict per reviewer per round.
CREATE TABLE change_request_reviews (
    change_request_id uuid NOT NULL CONSTRAINT change_request_reviews_request_fk
                          REFERENCES change_requests (id) ON DELETE CASCADE,
    review_round      integer NOT NULL,
    reviewer_id       text NOT NULL,
    reviewer_type     text NOT NULL,
    verdict           text NOT NULL CONSTRAINT change_request_reviews_verdict_check
                          CHECK (verdict IN ('approved', 'rejected')),
    comment           text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT change_request_reviews_pkey PRIMARY KEY (change_request_id, review_round, reviewer_id)
);
