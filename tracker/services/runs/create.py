"""Creating a run: a TestRun for a scope, lane and release, cut into shards before any executor sees it, and queued."""
from __future__ import annotations

from ...models import FailingConfig, TestRun
from ...vocab import Lane
from .. import shards
from ..queue import enqueue_run
from .scope import RunError, check_release, resolve_scope


def create_run(kind: str, *, tasks=None, api: str | None = None, lane: str = Lane.CPU, requested_by: str = "",
               release: str = "", parent: TestRun | None = None, configs: list[int] | None = None,
               extra_scope: dict | None = None) -> TestRun:
    """``configs``: only these FailingConfig ids of the scope (a bisection probe lane), else all of them;
    ``extra_scope``: more keys of the run's scope (the first start's ``diagnose_after``)."""
    release = check_release(release)
    chosen = resolve_scope(kind, tasks=tasks, api=api, lane=lane)
    found = FailingConfig.objects.filter(task__in=chosen)
    total = found.filter(id__in=configs).count() if configs is not None else found.count()
    if total == 0:
        raise RunError("the scope has no failing configs to run (is the board imported?)")
    scope = {"kind": kind, "tasks": sorted(t.number for t in chosen), **(extra_scope or {})}
    if api:
        scope["api"] = api
    if configs is not None:
        scope["configs"] = sorted(configs)
    run = TestRun.objects.create(scope=scope, lane=lane, total=total, requested_by=requested_by, release=release,
                                 parent=parent)
    shards.ensure_shards(run)  # planned once, by the requester's RUNNER_SHARD_SIZE, before any executor sees it
    return run


def start_run(kind: str, *, tasks=None, api=None, lane=Lane.CPU, requested_by="") -> TestRun:
    """Create and enqueue for the lane's qcluster."""
    run = create_run(kind, tasks=tasks, api=api, lane=lane, requested_by=requested_by)
    enqueue_run(run)
    return run
