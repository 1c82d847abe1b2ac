"""Creating a run: a TestRun for a scope, lane and release, cut into shards before any executor sees it, and queued."""
from __future__ import annotations

from ...models import FailingConfig, TestRun
from ...vocab import Lane
from .. import shards
from ..queue import enqueue_run
from .. import paddle_envs
from .scope import RunError, check_paddle_flags, check_release, check_torch, resolve_scope

MAX_THREADS = 256  # more threads than any host here has cores: a typo, refused before anything is created


def check_threads(threads) -> int:
    """A run's thread count: a whole number from 1 to MAX_THREADS (RunError otherwise, nothing created)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
        raise RunError(f"threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
    return threads


def create_run(kind: str, *, tasks=None, api: str | None = None, lane: str = Lane.CPU, requested_by: str = "",
               release: str = "", parent: TestRun | None = None, configs: list[int] | None = None,
               extra_scope: dict | None = None, paddle_flags=None, flags_checked: bool = False,
               readings: bool = False, threads: int = 1, torch: str = "") -> TestRun:
    """``configs``: only these FailingConfig ids of the scope (a bisection probe lane), else all of them;
    ``extra_scope``: more keys of the run's scope (the first start's ``diagnose_after``).
    ``paddle_flags``: the Paddle flags its workers run with (a ``NAME=VALUE, ...`` string or a dict), refused
    (RunError) before anything is created when malformed or not defined by the release's Paddle;
    ``flags_checked``: already checked for this release (a matrix run's lanes); ``readings``: every config that is
    not exact also gets its stability and who-is-closer readings (apitester.readings; off by default); ``threads``:
    the threads both frameworks are pinned to in its workers (1 by default: the exact rule is judged single-threaded);
    ``torch``: judge against this Torch instead of the project's (an env pairing the release with it must exist on a
    worker; the run then names its release explicitly, the main env's included)."""
    threads = check_threads(threads)
    release = check_release(release)
    torch = check_torch(release, torch)
    if torch and not release:
        release = paddle_envs.main_version()
    flags = dict(paddle_flags or {}) if flags_checked else check_paddle_flags(paddle_flags, [release])
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
                                 parent=parent, paddle_flags=flags, readings=readings, threads=threads, torch=torch)
    shards.ensure_shards(run)  # planned once, by the requester's RUNNER_SHARD_SIZE, before any executor sees it
    return run


def start_run(kind: str, *, tasks=None, api=None, lane=Lane.CPU, requested_by="", paddle_flags=None,
              readings: bool = False, threads: int = 1) -> TestRun:
    """Create and enqueue for the lane's qcluster."""
    run = create_run(kind, tasks=tasks, api=api, lane=lane, requested_by=requested_by, paddle_flags=paddle_flags,
                     readings=readings, threads=threads)
    enqueue_run(run)
    return run
