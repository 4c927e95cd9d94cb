-- Key locks of config and permission writes (service/repositories/key_locks.py): both
-- kinds of entry lock their keys the same way, each in a lock space of its own.

-- name: lock_entry_keys :value
-- Writes of one key in one tree wait for each other only along a line of descent: a
-- write at T holds (T, key) exclusively and (A, key) shared for every ancestor A of T,
-- so writes at siblings run at once, while a write at A (locking the key, say) and a
-- write below A take turns and the second sees the first's committed row. Parallel
-- arrays: paths (the ancestry path of each tenant written), keys, and exclusive (false:
-- the path's last tenant is held shared too, as for a child being created under it).
-- :'lock_space' is the kind of entry ('config_entries' or 'permission_policies'): each
-- kind's keys are locked apart.
-- Locks are taken in one global order (by lock key), so two writers never deadlock.
SELECT count(CASE WHEN k.exclusive
                  THEN pg_advisory_xact_lock(hashtext(:'lock_space'::text), k.lock_key)
                  ELSE pg_advisory_xact_lock_shared(hashtext(:'lock_space'::text), k.lock_key)
             END) AS locked
FROM (
    -- every tenant on every path with its key; exclusive only for a path's own tenant
    SELECT hashtext(s.tenant_id || '/' || r.key) AS lock_key,
           bool_or(r.exclusive AND s.ord = s.last) AS exclusive
    FROM unnest(:'paths'::text[], :'keys'::text[], :'exclusive'::boolean[])
             AS r(path, key, exclusive)
    CROSS JOIN LATERAL (
        SELECT u.tenant_id, u.ord, count(*) OVER () AS last
        FROM unnest(string_to_array(ltrim(r.path, '/'), '/')) WITH ORDINALITY
                 AS u(tenant_id, ord)
    ) AS s
    GROUP BY 1
    ORDER BY 1
) AS k;
