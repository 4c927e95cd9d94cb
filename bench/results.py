"""The typed results of a benchmark run: what `python -m bench run` writes to
bench/results/*.json and what the report, the markdown tables and the targets read.

Every figure is a field, so a renamed one is a type error (mypy) rather than a target
silently "not measured". Files written by earlier versions decode too: fields they lack
are optional, keys they have and these types do not are ignored.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from bench.shapes import SeedPlan


class Figures(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Base of every result type."""


class LoadFigures(Figures, frozen=True):
    """A load run: a fixed number of connections for a duration (bench/loadgen.py)."""

    tool: str
    connections: int
    duration_s: float
    requests: int
    errors: int
    rps: float
    p50_ms: float
    p99_ms: float
    max_ms: float


class SeriesFigures(Figures, frozen=True):
    """Requests one after the other: end-to-end latencies (bench/loadgen.py)."""

    count: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    statuses: dict[str, int]
    first_error: str | None = None


class EndpointFigures(Figures, frozen=True):
    load: LoadFigures
    sequential: SeriesFigures | None = None


class MoveFigures(Figures, frozen=True):
    """A move size: timed in sequence, or (the largest) as part of the interference run,
    which times each move alone (each_ms; older files: first_ms, second_ms)."""

    tenants_moved: int
    count: int
    errors: int
    max_ms: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    statuses: dict[str, int] | None = None
    first_error: str | None = None
    each_ms: list[float] | None = None
    first_ms: float | None = None
    second_ms: float | None = None


class InterferenceMoves(Figures, frozen=True):
    count: int
    errors: int
    max_ms: float
    each_ms: list[float] | None = None
    first_ms: float | None = None
    second_ms: float | None = None


class Interference(Figures, frozen=True):
    """Other requests' latency while the largest move runs, against a quiet service."""

    moves: InterferenceMoves
    rate_rps: float
    window_s: float
    # Older files hold one load each instead of a list of rounds.
    quiet: list[LoadFigures] | LoadFigures
    during_move: list[LoadFigures] | LoadFigures
    p99_ratio: float | None
    quiet_p99_ms: float | None = None
    during_p99_ms: float | None = None


class Moves(Figures, frozen=True):
    move_1: MoveFigures | None = None
    move_1000: MoveFigures | None = None
    move_10000: MoveFigures | None = None
    move_100000: MoveFigures | None = None
    interference: Interference | None = None

    def sizes(self) -> dict[str, MoveFigures]:
        found = {
            "move_1": self.move_1,
            "move_1000": self.move_1000,
            "move_10000": self.move_10000,
            "move_100000": self.move_100000,
        }
        return {name: figures for name, figures in found.items() if figures is not None}


class Writes(Figures, frozen=True):
    create: SeriesFigures | None = None
    batch_100: SeriesFigures | None = None

    def all(self) -> dict[str, SeriesFigures]:
        found = {"create": self.create, "batch_100": self.batch_100}
        return {name: figures for name, figures in found.items() if figures is not None}


class SeedFigures(Figures, frozen=True):
    plan: SeedPlan
    tenants: int
    closure_rows: int
    config_entries: int
    permission_policies: int
    generate_s: float
    copy_s: float
    index_s: float
    total_s: float


class Seeds(Figures, frozen=True):
    main: SeedFigures
    # None when the run left out the scale comparison (--only without scale).
    small: SeedFigures | None = None


class Timing(Figures, frozen=True):
    """A prepared statement's timed runs (bench/sqlcompare.py)."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    rows: int


class Operation(Figures, frozen=True):
    """One hierarchy question answered by each strategy on one sample tenant."""

    tenant_id: str
    tenant_depth: int
    strategies: dict[str, Timing]
    ratios_p50: dict[str, float | None]
    agree: bool
    disagreeing: list[str]


class Ltree(Figures, frozen=True):
    available: bool
    extension_installed_by_run: bool
    build_ms: dict[str, float] | None = None
    rows: int | None = None
    error: str | None = None


class DepthPick(Figures, frozen=True):
    target: int
    id: str
    depth: int


class SubtreePick(Figures, frozen=True):
    target: int
    id: str
    depth: int
    descendants: int


class Sampling(Figures, frozen=True):
    percent: float
    closure_rows_estimate: int


class Samples(Figures, frozen=True):
    depth: list[DepthPick]
    subtree: list[SubtreePick]
    sampling: Sampling


class SqlComparison(Figures, frozen=True):
    """Closure table, recursive CTE and ltree side by side (bench/sqlcompare.py)."""

    repeats: int
    warmups: int
    server_version: int
    all_visible_fraction: dict[str, float]
    round_trip_floor: Timing
    ltree: Ltree
    samples: Samples
    operations: dict[str, Operation]
    all_agree: bool


class ScaledRead(Figures, frozen=True):
    p50_ms: float
    round_p50s_ms: list[float]
    p99_ms: float


class ScaleSide(Figures, frozen=True):
    tenants: int
    context_depth10: ScaledRead
    ancestors_depth10: ScaledRead


class Scale(Figures, frozen=True):
    """Depth-10 reads on the main database against the small one (read cache off)."""

    read_cache: str
    rounds: int
    small: ScaleSide
    main: ScaleSide
    context_depth10_ratio: float
    ancestors_depth10_ratio: float


class DepthPoint(Figures, frozen=True):
    depth: int
    context: SeriesFigures
    ancestors: SeriesFigures


class DepthSweep(Figures, frozen=True):
    """Context and ancestors, one request at a time, down the deepest chain."""

    read_cache: str
    points: list[DepthPoint]


class WriterFigures(Figures, frozen=True):
    """An open-loop writer at a fixed rate beside the read load (bench/mixed.py).
    achieved_per_s counts answers that were not errors (a lower bound: errors also
    count requests that never got an answer)."""

    rate_per_s: float
    achieved_per_s: float
    load: LoadFigures


class MixedPhase(Figures, frozen=True):
    """Contexts read under load while config writes (and moves) arrive at fixed rates;
    the reads as ratios to B_db and to the phase without writes or moves."""

    writes_per_s: float
    moves_per_s: float
    reads: LoadFigures
    writes: WriterFigures | None = None
    moves: WriterFigures | None = None
    x_b_db: float | None = None
    x_no_writes: float | None = None


class Mixed(Figures, frozen=True):
    """The mixed-workload benchmark (bench/mixed.py)."""

    read_tenants: int
    write_tenants: int
    write_depth: int
    moved_tenants: int
    b_db_rps: float | None
    phases: list[MixedPhase]

    def phase(self, writes_per_s: float, moves_per_s: float = 0.0) -> MixedPhase | None:
        for phase in self.phases:
            if phase.writes_per_s == writes_per_s and phase.moves_per_s == moves_per_s:
                return phase
        return None


class Machine(Figures, frozen=True):
    cpu: str | None
    cores: int | None
    memory_gib: float | None
    os: str
    python: str
    postgres: str
    postgres_kind: str
    wrk: str | None
    note: str


class Options(Figures, frozen=True):
    tenants: int
    connections: int
    duration_s: float
    pool_size: int
    load_tool: str


class TargetResult(Figures, frozen=True):
    target: str
    goal: str
    value: float | None
    unit: str
    met: bool | None
    note: str


class RunResult(Figures, frozen=True):
    mode: str
    started_at: str
    options: Options
    machine: Machine
    seed: Seeds
    baselines: dict[str, EndpointFigures]
    endpoints: dict[str, EndpointFigures]
    writes: Writes = Writes()
    moves: Moves = Moves()
    sql: SqlComparison | None = None
    scale: Scale | None = None
    mixed: Mixed | None = None
    depths: DepthSweep | None = None
    targets: list[TargetResult] = []
    elapsed_s: float | None = None
    # Which targets judge the run (bench/targets.py): 1 before the cached reads and the
    # uncached context were judged against their baselines, 2 since, 3 since the batch
    # context read is judged against single context reads.
    target_rules: int = 1


class MemoryRow(Figures, frozen=True):
    """One service process's memory over a soak."""

    process: int
    after_warm_up_mib: float
    at_the_end_mib: float
    peak_mib: float
    growth_pct: float


class SoakReport(Figures, frozen=True):
    """What `python -m bench.soak` reports (bench/soak.py)."""

    minutes: float
    processes: int
    clients: int
    requests: int
    requests_per_second: float
    p50_ms: float | None
    p99_ms: float | None
    statuses: dict[int, int]
    refusals: dict[str, int]
    five_xx: int
    client_errors: dict[str, int]
    tenants_created: int
    events: int
    deliveries: int
    delivery_attempts: int
    receiver_requests: int
    deliveries_not_finished: int
    events_without_delivery: int
    deliveries_never_received: int
    memory: list[MemoryRow]
    memory_flat: bool
    ok: bool


def encode(result: Figures) -> bytes:
    """Indented JSON, as the committed files are written."""
    return msgspec.json.format(msgspec.json.encode(result), indent=2) + b"\n"


def load_run(path: Path) -> RunResult:
    return msgspec.json.decode(path.read_bytes(), type=RunResult)
