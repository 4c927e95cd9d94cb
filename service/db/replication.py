"""WAL positions of the primary and the replicas (service/db/replicas.py)."""

from __future__ import annotations

from service.db.queries import Executor
from service.db.repository import NamedSql, Repository


class ReplicationRepository(Repository):
    _position = NamedSql("current_wal_position")
    _state = NamedSql("replica_state")
    _replayed = NamedSql("replay_position")

    async def current_position(self, conn: Executor) -> int:
        return int(await self._position.value(conn))

    async def replica_state(self, conn: Executor) -> tuple[bool, int]:
        """(is a standby, replayed WAL position)."""
        row = await self._state.one(conn)
        assert row is not None
        return bool(row["standby"]), int(row["replayed"])

    async def replayed_position(self, conn: Executor) -> int:
        """What a standby has replayed (0 on a server that is not one)."""
        return int(await self._replayed.value(conn))
