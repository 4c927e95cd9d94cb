"""CPU per request of the service's own code, measured in process.

Raw HTTP requests are fed to the real connection protocol (service/http/deadlines.py's
TimedRequestHandler) of an app built by create_app, and the answers' bytes are counted
and dropped: no socket, no kernel and no load generator share the measurement, so the
rounds of one run agree to about 1 % and separate runs of the same code to about 5 %.
It is the tool for one change's before/after on the per-request path; the throughput
figures of `bench run` stay the judge (they add the socket writes, about 6 microseconds
of B_http's and 12 of a 20 kB context's).

B_http's app (bench/baselines.py) is measured the same way, so each figure is also given
as B_http's CPU over the endpoint's: the in-process counterpart of "x B_http".

    python -m bench.request_cpu [--database-url URL] [--tenants 10000] [--requests 5000]
                                [--log-level info]

It seeds a database `bench_request_cpu` (on --database-url, else the embedded server
under .data/bench) with the bench's shapes, then measures a cached GET tenant, a cached
context at depth 10 (also asked for gzip, as most clients ask), the tenant and the
context again with the read cache off, and a config write. The
service's logs are at --log-level, by default the service's own default (info: every
request writes its access line, gathered as the service gathers them), written to
/dev/null so that the table stays readable.

On a busy virtual machine those CPU figures move by a third between runs. With
`--instructions` the run starts again under valgrind's callgrind (bench/instructions.py)
and gives instructions per request instead: the same figure for the same code within
about 2 %, whatever else runs. Its caveat: callgrind runs the code about 60 x slower,
so what is batched by time (the access lines, written every 50 ms) is written in
smaller batches and weighs more per request than at full speed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bench.baselines import create_baseline_app
from bench.environment import PostgresServer
from bench.instructions import Counter, rerun_under_callgrind
from bench.runner import prepare
from service.app import create_app
from service.http.deadlines import Deadlines, TimedRequestHandler
from service.observability.logs import configure_logging
from service.server import YOUNG_COLLECTION_THRESHOLD, new_event_loop
from service.settings.options import Settings

API = "/api/v1/tenants"
WRITE_KEY = "bench.request_cpu"
ROUND_TIMEOUT_S = 600.0


class _Sink(asyncio.Transport):
    """A connection's transport that keeps nothing: each write ends the request (every
    answer measured here leaves in one write). An answer other than 2xx is remembered:
    figures of refused requests would measure the wrong path."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: asyncio.Future[None] | None = None
        self.sent = 0
        self.refused: bytes | None = None
        self._closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default
        )

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def write(self, data: Any) -> None:
        self.writelines([data])

    def writelines(self, list_of_data: Any) -> None:
        chunks = list(list_of_data)
        self.sent += sum(len(chunk) for chunk in chunks)
        head = bytes(chunks[0][:12]) if chunks else b""
        if not head.startswith(b"HTTP/1.1 2") and self.refused is None:
            self.refused = head
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(None)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1:8080"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def measure(
    app: web.Application,
    requests: Callable[[int], bytes],
    count: int,
    rounds: int,
    counter: Counter | None = None,
) -> tuple[float, float]:
    """Median and lowest CPU microseconds per request over `rounds` rounds of `count`
    (instructions per request when `counter` counts them)."""
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    try:
        loop = asyncio.get_running_loop()
        assert runner.server is not None
        protocol = TimedRequestHandler(runner.server, loop=loop, deadlines=Deadlines(30.0, 30.0))
        sink = _Sink()
        protocol.connection_made(sink)
        sequence = 0

        async def run(n: int) -> None:
            nonlocal sequence
            for _ in range(n):
                sequence += 1
                sink.answered = loop.create_future()
                protocol.data_received(requests(sequence))
                await sink.answered

        # A round that stops answering fails the run instead of waiting forever (seen
        # once under callgrind: an answer that never came).
        async with asyncio.timeout(ROUND_TIMEOUT_S):
            await run(min(count, 2000))  # caches, prepared statements, the route table
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, 20, 10)  # as service/server.py runs
        figures = []
        for _ in range(rounds):
            async with asyncio.timeout(ROUND_TIMEOUT_S):
                if counter is not None:
                    figures.append(await counter.count(lambda: run(count)) / count)
                    continue
                started = time.process_time()
                await run(count)
                figures.append((time.process_time() - started) / count * 1e6)
        sink.close()
        protocol.connection_lost(None)
        if sink.refused is not None:
            raise RuntimeError(f"an answer was not 2xx: {sink.refused.decode(errors='replace')}")
        return statistics.median(figures), min(figures)
    finally:
        await runner.cleanup()


async def run_all(args: argparse.Namespace, server: PostgresServer) -> None:
    prepared = await prepare(server, "bench_request_cpu", args.tenants, args.data_dir, 10)
    configure_logging(args.log_level, stream=args.log_stream)
    env = {**prepared.env, "LOG_LEVEL": args.log_level}
    cached = Settings.from_env(env)
    uncached = Settings.from_env({**env, "READ_CACHE_SIZE": "0"})
    tenant = prepared.seed.samples[0]
    deep = prepared.seed.landmarks["context_d10"]
    headers = prepared.headers
    # What most HTTP clients send, the Python client among them.
    gzip_headers = {**headers, "Accept-Encoding": "gzip, deflate"}
    cases: list[tuple[str, Settings | None, Callable[[int], bytes]]] = [
        ("B_http", None, lambda _: _request("GET", "/http", {})),
        ("get_tenant", cached, lambda _: _request("GET", f"{API}/{tenant}", headers)),
        ("context_depth10", cached, lambda _: _request("GET", f"{API}/{deep}/context", headers)),
        (
            "context_depth10_gzip",
            cached,
            lambda _: _request("GET", f"{API}/{deep}/context", gzip_headers),
        ),
        ("get_tenant_uncached", uncached, lambda _: _request("GET", f"{API}/{tenant}", headers)),
        (
            "context_depth10_uncached",
            uncached,
            lambda _: _request("GET", f"{API}/{deep}/context", headers),
        ),
        (
            "config_write",
            cached,
            lambda i: _request(
                "PUT", f"{API}/{tenant}/config/{WRITE_KEY}", headers, b'{"value": %d}' % i
            ),
        ),
    ]
    baseline: float | None = None
    counter = Counter.active()
    unit = "us" if counter is None else "instr"
    print(f"{'request':28} {'median ' + unit:>12} {'lowest ' + unit:>12} {'B_http / it':>12}")
    for name, settings, requests in cases:
        if args.only and name not in args.only and name != "B_http":
            continue
        app = create_baseline_app(prepared.dsn, 2) if settings is None else create_app(settings)
        count = args.requests if name != "config_write" else max(50, args.requests // 20)
        median, lowest = await measure(app, requests, count, args.rounds, counter)
        baseline = baseline or median
        print(f"{name:28} {median:12.1f} {lowest:12.1f} {baseline / median:12.3f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.request_cpu", description=__doc__)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=5_000, help="per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error")
    )
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default=None,
        help="comma-separated requests to measure (B_http always is), e.g. "
        "get_tenant,context_depth10",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per request under valgrind's callgrind instead of "
        "timing CPU (repeatable on a busy machine; about 60 x slower: fewer --requests)",
    )
    args = parser.parse_args(argv)
    if args.instructions and Counter.active() is None:
        given = sys.argv[1:] if argv is None else list(argv)
        raise SystemExit(rerun_under_callgrind("bench.request_cpu", given))
    with (
        open(os.devnull, "w") as args.log_stream,
        PostgresServer(args.database_url, args.data_dir) as server,
    ):
        loop = new_event_loop()
        try:
            loop.run_until_complete(run_all(args, server))
        finally:
            loop.close()


if __name__ == "__main__":
    main()
