"""Bounds on a database connection whose server vanished without closing it (a host
lost, a partition): TCP keepalives find a silent peer while a connection waits for an
answer, TCP_USER_TIMEOUT one that stops acknowledging what is sent. Either ends the
connection with an OSError, which answers 503 and discards the connection
(service/db/errors.py), instead of a request hanging until the host comes back.
asyncpg has no setting for them, so they are set on its socket once connected."""

from __future__ import annotations

import socket

import asyncpg

PROBES = 3


def detect_dead_server(conn: asyncpg.Connection, within_seconds: float) -> None:
    """Give up on the server of conn about within_seconds after it went silent."""
    if within_seconds <= 0:
        return
    transport = getattr(conn, "_transport", None)
    sock = None if transport is None else transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # a Unix socket: the server is on this host
    idle = max(1, int(within_seconds / 2))
    interval = max(1, int((within_seconds - idle) / PROBES))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (
        ("TCP_KEEPIDLE", idle),
        ("TCP_KEEPINTVL", interval),
        ("TCP_KEEPCNT", PROBES),
        ("TCP_USER_TIMEOUT", int(within_seconds * 1000)),
    ):
        option = getattr(socket, name, None)
        if option is not None:  # Linux has them all; others keep their defaults
            sock.setsockopt(socket.IPPROTO_TCP, option, value)
