"""Waiting on real processes (servers, qclusters, runs): the suite's one poll loop."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import pytest


def log_tail(path: str | Path | None, chars: int = 3000) -> str:
    """The end of a process's log file, or "" when there is none yet."""
    if not path or not Path(path).exists():
        return ""
    return Path(path).read_text(encoding="utf-8", errors="replace")[-chars:]


def wait_for(predicate: Callable, timeout: float, what: str, context: Callable[[], str] | str | Path | None = None,
             *, interval: float = 0.25):
    """Poll `predicate` until it returns a truthy value and return it; FAIL with `what` on timeout, followed by
    `context` — a callable returning text (e.g. the processes' logs) or a log file whose tail is shown."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = context() if callable(context) else log_tail(context)
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{detail}", pytrace=False)
        time.sleep(interval)
