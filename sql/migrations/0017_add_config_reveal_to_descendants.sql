-- A sensitive config value is revealed (?reveal=true) only to admins who can see the
-- tenant that holds it. reveal_to_descendants is its owner's explicit choice to share it
-- with admins of the tenants below, whose contexts inherit it (docs/decisions.md,
-- "Revealing inherited secrets"). Off unless set: existing values stay private to the
-- subtree of their tenant.
ALTER TABLE config_entries
    ADD COLUMN reveal_to_descendants boolean NOT NULL DEFAULT false;
