"""A test that hangs fails after pytest-timeout's bound (`timeout` in pyproject.toml)
with what it was waiting for: the threads' stacks, which for an asyncio test end in the
event loop's select(), and every asyncio task's stack; then it fails the test as
pytest-timeout does, so the suite goes on."""

from __future__ import annotations

import asyncio
import faulthandler
import signal
import sys
import threading
from types import FrameType
from typing import Any

import pytest


def dump_tasks() -> None:
    """Every unfinished task of the running loop, with the line it waits at."""
    loop = asyncio._get_running_loop()
    if loop is None:
        print("no event loop is running", file=sys.stderr)
        return
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    print(f"+++ {len(tasks)} asyncio tasks at the timeout +++", file=sys.stderr)
    for task in tasks:
        task.print_stack(limit=12, file=sys.stderr)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """The signal method, with the tasks dumped first; other methods as pytest-timeout."""
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None

    def handler(_signum: int, _frame: FrameType | None) -> None:
        __tracebackhide__ = True
        faulthandler.dump_traceback(sys.stderr, all_threads=True)
        dump_tasks()
        pytest.fail(f"Timeout (>{settings.timeout}s): the asyncio tasks are on stderr")

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True
