"""HTTP load against a loopback server: wrk when installed, else an aiohttp generator.

`run_load()` keeps `connections` requests going for `duration_s` (a closed loop) through
wrk, or through the Python generator when wrk is missing, when `tool="python"`, or when
a fixed `rate` is asked for (Debian's wrk is not wrk2 and cannot pace). At a fixed rate
the Python generator runs an open loop: request i is due at t0 + i/rate and its latency
counts from that due time, so a server that stalls shows up in the latencies instead of
quietly slowing the generator down (no coordinated omission).

`time_requests()` sends requests one at a time, for single heavy operations (create,
batch, move) where a throughput figure would mean little.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.results import LoadFigures, SeriesFigures

# Past this a request counts as an error: a load run must end on its own.
REQUEST_TIMEOUT_S = 10.0
# A move's answer may take longer than any read (the largest's goal is 15 s): a client
# that gave up at REQUEST_TIMEOUT_S counted a slow move as an error, and the next moves,
# sent while the server still ran it, as more.
MOVE_TIMEOUT_S = 120.0
ERROR_BODY_CHARS = 300


@dataclass(frozen=True)
class Target:
    method: str
    path: str  # path + query, e.g. "/api/v1/tenants/<id>"
    body: bytes | None = None  # JSON body (Content-Type: application/json when set)


@dataclass(frozen=True)
class LoadResult:
    tool: str  # "wrk" or "python"
    connections: int
    duration_s: float
    requests: int  # answers received, whatever their status
    errors: int  # transport errors + non-2xx/3xx answers
    rps: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    def figures(self) -> LoadFigures:
        return LoadFigures(
            tool=self.tool,
            connections=self.connections,
            duration_s=_ms(self.duration_s),
            requests=self.requests,
            errors=self.errors,
            rps=_ms(self.rps),
            p50_ms=_ms(self.p50_ms),
            p99_ms=_ms(self.p99_ms),
            max_ms=_ms(self.max_ms),
        )


@dataclass(frozen=True)
class SeriesResult:
    count: int  # requests sent
    errors: int  # transport errors + statuses outside `expect`
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    statuses: dict[int, int]
    first_error: str | None = None  # the first error, its body cut to ERROR_BODY_CHARS

    def figures(self) -> SeriesFigures:
        return SeriesFigures(
            count=self.count,
            errors=self.errors,
            p50_ms=_ms(self.p50_ms),
            p99_ms=_ms(self.p99_ms),
            max_ms=_ms(self.max_ms),
            mean_ms=_ms(self.mean_ms),
            statuses={str(k): v for k, v in sorted(self.statuses.items())},
            first_error=self.first_error,
        )


def _ms(value: float) -> float:
    # Results keep three decimals (microseconds for times).
    return round(value, 3)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0.0 for an empty one)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def spread_ms(latencies_s: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of latencies in seconds, in milliseconds."""
    ordered = sorted(latencies_s)
    return {
        "p50_ms": percentile(ordered, 50) * 1000,
        "p99_ms": percentile(ordered, 99) * 1000,
        "max_ms": (ordered[-1] if ordered else 0.0) * 1000,
    }


def is_success(status: int) -> bool:
    return 200 <= status < 400


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


async def run_load(
    base_url: str,
    targets: Sequence[Target],
    *,
    headers: Mapping[str, str],
    connections: int,
    duration_s: float,
    rate: float | None = None,
    tool: str = "auto",
    threads: int = 1,
) -> LoadResult:
    """Load base_url with targets round-robin for duration_s; see the module docstring.

    tool: "auto" (wrk when on PATH, else python), "wrk" or "python"; a rate always
    means python. wrk runs whole seconds (duration_s rounded, at least 1).
    """
    if not targets:
        raise ValueError("run_load needs at least one target")
    if connections < 1 or duration_s <= 0 or (rate is not None and rate <= 0):
        raise ValueError("connections, duration_s and rate must be positive")
    if tool not in ("auto", "wrk", "python"):
        raise ValueError(f"unknown tool {tool!r}")
    use_wrk = rate is None and (tool == "wrk" or (tool == "auto" and wrk_available()))
    if use_wrk:
        return await _run_wrk(base_url, targets, headers, connections, duration_s, threads)
    return await _run_python(base_url, targets, headers, connections, duration_s, rate)


# --- wrk ---------------------------------------------------------------------------------

# Each wrk thread has its own Lua state; setup() (in the main state) keeps every thread
# so done() can add up their `bad_status` counters with thread:get().
_LUA_TEMPLATE = """\
local targets = {
%(targets)s
}
local headers = {%(headers)s}
local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  prepared = {}
  for i, t in ipairs(targets) do
    local h = {}
    for k, v in pairs(headers) do h[k] = v end
    if t[3] ~= nil then h["Content-Type"] = "application/json" end
    prepared[i] = wrk.format(t[1], t[2], h, t[3])
  end
  -- Threads start at different targets so short runs still mix them.
  position = (thread_index or 0) %% #prepared
  bad_status = 0
end

function request()
  position = position %% #prepared + 1; return prepared[position]
end

function response(status, headers, body)
  if status < 200 or status > 399 then bad_status = bad_status + 1 end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do bad = bad + (thread:get("bad_status") or 0) end
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  io.write(string.format(
    '{"requests":%%.0f,"errors":%%.0f,"socket_errors":%%.0f,"bad_status":%%.0f,' ..
    '"duration_us":%%.0f,"p50_us":%%.0f,"p99_us":%%.0f,"max_us":%%.0f}\\n',
    summary.requests, bad + socket, socket, bad, summary.duration,
    latency:percentile(50.0), latency:percentile(99.0), latency.max))
end
"""


def lua_string(value: str | bytes) -> str:
    """A Lua string literal for any bytes (decimal escapes outside printable ASCII)."""
    raw = value.encode() if isinstance(value, str) else value
    plain = [chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03d}" for b in raw]
    return '"' + "".join(plain) + '"'


def wrk_script(targets: Sequence[Target], headers: Mapping[str, str]) -> str:
    target_rows = ",\n".join(
        f"  {{{lua_string(t.method)}, {lua_string(t.path)}, "
        f"{'nil' if t.body is None else lua_string(t.body)}}}"
        for t in targets
    )
    header_rows = ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items())
    return _LUA_TEMPLATE % {"targets": target_rows, "headers": header_rows}


async def _run_wrk(
    base_url: str,
    targets: Sequence[Target],
    headers: Mapping[str, str],
    connections: int,
    duration_s: float,
    threads: int,
) -> LoadResult:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk is not installed")
    threads = max(1, min(threads, connections))  # wrk refuses fewer connections than threads
    seconds = max(1, round(duration_s))  # wrk takes whole seconds only
    with tempfile.TemporaryDirectory(prefix="loadgen-") as folder:
        script = Path(folder) / "targets.lua"
        script.write_text(wrk_script(targets, headers), encoding="utf-8")
        options = [f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "-s", str(script)]
        process = await asyncio.create_subprocess_exec(
            wrk,
            *options,
            f"--timeout={int(REQUEST_TIMEOUT_S)}s",
            base_url,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"wrk exited with {process.returncode}: {err.decode().strip()}")
    lines = [line for line in out.decode().splitlines() if line.startswith('{"requests"')]
    if not lines:
        raise RuntimeError(f"wrk printed no result line:\n{out.decode()}{err.decode()}")
    found = json.loads(lines[-1])
    duration = found["duration_us"] / 1e6
    return LoadResult(
        tool="wrk",
        connections=connections,
        duration_s=duration,
        requests=int(found["requests"]),
        errors=int(found["errors"]),
        rps=found["requests"] / duration if duration > 0 else 0.0,
        p50_ms=found["p50_us"] / 1000,
        p99_ms=found["p99_us"] / 1000,
        max_ms=found["max_us"] / 1000,
    )


def _session(
    headers: Mapping[str, str], connections: int, timeout_s: float = REQUEST_TIMEOUT_S
) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=connections),
        headers=dict(headers),
        timeout=aiohttp.ClientTimeout(total=timeout_s),
    )


async def _send(session: aiohttp.ClientSession, base_url: str, target: Target) -> tuple[int, bytes]:
    extra = {"Content-Type": "application/json"} if target.body is not None else None
    async with session.request(
        target.method, base_url + target.path, data=target.body, headers=extra
    ) as response:
        return response.status, await response.read()


async def _run_python(
    base_url: str,
    targets: Sequence[Target],
    headers: Mapping[str, str],
    connections: int,
    duration_s: float,
    rate: float | None,
) -> LoadResult:
    async with _session(headers, connections) as session:
        run = _PythonRun(session, base_url, targets, connections)
        started = time.perf_counter()
        if rate is None:
            await run.closed_loop(duration_s)
        else:
            await run.open_loop(duration_s, rate)
        elapsed = time.perf_counter() - started
    answered = len(run.latencies)
    return LoadResult(
        tool="python",
        connections=connections,
        duration_s=elapsed,
        requests=answered,
        errors=run.errors,
        rps=answered / elapsed,
        **spread_ms(run.latencies),
    )


@dataclass
class _PythonRun:
    session: aiohttp.ClientSession
    base_url: str
    targets: Sequence[Target]
    connections: int
    latencies: list[float] = field(default_factory=list)  # seconds, answered requests only
    errors: int = 0

    async def timed(self, target: Target, since: float) -> None:
        """One request; its latency counts from `since` (a due time, in an open loop)."""
        try:
            status, _ = await _send(self.session, self.base_url, target)
        except (aiohttp.ClientError, TimeoutError):
            self.errors += 1
            return
        self.latencies.append(time.perf_counter() - since)
        if not is_success(status):
            self.errors += 1

    async def closed_loop(self, duration_s: float) -> None:
        deadline = time.perf_counter() + duration_s
        sequence = itertools.count()

        async def worker() -> None:
            while time.perf_counter() < deadline:
                target = self.targets[next(sequence) % len(self.targets)]
                await self.timed(target, time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(self.connections)))

    async def open_loop(self, duration_s: float, rate: float) -> None:
        """Request i is due at t0 + i/rate; at most `connections` are in flight, and a
        request waiting for a free slot has that wait in its latency. Whatever is still
        unsent or unanswered REQUEST_TIMEOUT_S after the run's end counts as an error."""
        slots = asyncio.Semaphore(self.connections)
        in_flight: set[asyncio.Task[None]] = set()
        t0 = time.perf_counter()
        total = max(1, int(duration_s * rate))
        give_up = t0 + duration_s + REQUEST_TIMEOUT_S

        async def one(target: Target, due: float) -> None:
            try:
                await self.timed(target, due)
            finally:
                slots.release()

        for i in range(total):
            due = t0 + i / rate
            if (wait := due - time.perf_counter()) > 0:
                await asyncio.sleep(wait)
            try:
                if slots.locked():  # every slot busy: this wait goes into the latency
                    await asyncio.wait_for(slots.acquire(), max(0.0, give_up - time.perf_counter()))
                else:
                    await slots.acquire()
            except TimeoutError:
                self.errors += total - i  # never sent: the server held every slot too long
                break
            task = asyncio.create_task(one(self.targets[i % len(self.targets)], due))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        if in_flight:
            left = max(0.0, give_up - time.perf_counter())
            _, pending = await asyncio.wait(set(in_flight), timeout=left)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            self.errors += len(pending)


async def time_requests(
    base_url: str,
    targets: Sequence[Target],
    *,
    headers: Mapping[str, str],
    repeat: int | None = None,
    expect: Collection[int] = (200, 201, 204),
    timeout_s: float = REQUEST_TIMEOUT_S,
) -> SeriesResult:
    """Send requests one at a time and time each: every target once in order, or, with
    repeat, `repeat` requests in all cycling through the targets."""
    if not targets:
        raise ValueError("time_requests needs at least one target")
    count = len(targets) if repeat is None else repeat
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    errors = 0
    first_error: str | None = None
    async with _session(headers, 1, timeout_s) as session:
        for i in range(count):
            target = targets[i % len(targets)]
            started = time.perf_counter()
            try:
                status, body = await _send(session, base_url, target)
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors += 1
                first_error = first_error or f"{target.method} {target.path}: {exc!r}"
                continue
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            if status not in expect:
                errors += 1
                text = body[:ERROR_BODY_CHARS].decode(errors="replace")
                first_error = first_error or f"{target.method} {target.path}: {status} {text}"
    return SeriesResult(
        count=count,
        errors=errors,
        mean_ms=statistics.fmean(latencies) * 1000 if latencies else 0.0,
        statuses=statuses,
        first_error=first_error,
        **spread_ms(latencies),
    )
