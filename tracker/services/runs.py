"""Re-test runs: create a run for a scope and lane, execute it through apitester.pool, store each
config's verdict as it finishes, resume runs whose executor died, and record verification and
regression events when a run ends.

A run is claimed by one executor at a time (an atomic UPDATE on state/executor), so a redelivered
queue message or a second cluster never runs a config twice; the (run, failing_config) unique
constraint is the last line of defence.
"""
from __future__ import annotations

import logging
import math
import os
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apitester.inputs import Draw
from apitester.pool import PoolError, TimeBudget, WorkerPool, warm_pool
from apitester.pool import estimate_bytes as config_bytes

from .. import bisection
from ..models import ConfigResult, FailingConfig, RunShard, Source, Task, TaskStatus, TestRun
from ..selectors.runs import advertised_releases, regressions, run_configs, task_verification
from ..vocab import ACTIVE_RUN_STATES, EventKind, Status, status_class
from . import paddle_envs, shards
from .events import record_event
from .queue import enqueue_run

log = logging.getLogger(__name__)

SCOPE_KINDS = ("task", "tasks", "api", "all_open", "all")
LANES = (TestRun.Lane.CPU.value, TestRun.Lane.GPU.value)
ACTIVE_STATES = ACTIVE_RUN_STATES
# Start of the message a CPU-only executor leaves on a GPU run it received and declined.
GPU_DECLINED = "waiting for a GPU worker"
# The release of a matrix run's parent (its children carry the real releases).
MATRIX = "matrix"
# Start of the message an executor without the run's Paddle release leaves on the run it declined.
RELEASE_DECLINED = "waiting for a worker with Paddle"
# Start of the message the heartbeat round leaves on a queued run whose job it sent again (resend_unclaimed_runs).
RESENT = "job sent again"
# Start of the message an executor leaves on the run when something outside any one config stopped it.
EXECUTOR_ERROR = "executor error"


class RunError(ValueError):
    """A run request that can't be honoured (unknown task, wrong lane, nothing to run)."""


# ----------------------------------------------------------------------------- settings


def runner_workers() -> int:
    return settings.RUNNER_WORKERS


def stale_after() -> timedelta:
    """A running run whose executor hasn't reported for this long is orphaned."""
    return timedelta(seconds=settings.RUNNER_STALE_SECONDS)


def queued_resend_after() -> timedelta:
    """A queued run nobody took off the queue for this long is sent again (RUNNER_QUEUED_RESEND_SECONDS)."""
    return timedelta(seconds=settings.RUNNER_QUEUED_RESEND_SECONDS)


def max_requeues() -> int:
    """Re-queues in a row without a new verdict after which the stale sweep ends a run `failed`."""
    return settings.RUNNER_MAX_REQUEUES


def pool_options() -> dict:
    budget_mb = settings.RUNNER_MEMORY_BUDGET_MB
    return {
        "time_budget": TimeBudget(
            base=settings.RUNNER_TIME_BASE,
            per_million_elements=settings.RUNNER_TIME_PER_MELEMENT,
            maximum=settings.RUNNER_TIME_MAX,
        ),
        "memory_budget": budget_mb * 2**20 if budget_mb else None,
        "threads_per_worker": settings.RUNNER_THREADS_PER_WORKER or None,
    }


def executor_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# ----------------------------------------------------------------------------- creating runs


def _lane_kernel(lane: str) -> str:
    return "GPU" if lane == TestRun.Lane.GPU else "CPU"


def task_number_range() -> tuple[int, int]:
    """The task numbers the database can hold (Task.number's column range on this backend)."""
    lowest, highest = connection.ops.integer_field_range(Task._meta.get_field("number").get_internal_type())
    return max(1, lowest or 0), highest if highest is not None else 2**63 - 1


def resolve_scope(kind: str, *, tasks=None, api: str | None = None, lane: str = "cpu") -> list[Task]:
    """The tasks a scope names, checked against the lane (a CPU task's configs run on the cpu lane)."""
    if lane not in LANES:
        raise RunError(f"unknown lane {lane!r}: use one of {', '.join(LANES)}")
    if kind not in SCOPE_KINDS:
        raise RunError(f"unknown scope {kind!r}: use one of {', '.join(SCOPE_KINDS)}")
    kernel = _lane_kernel(lane)
    if kind in ("task", "tasks"):
        numbers = [int(n) for n in (tasks or [])]
        if not numbers:
            raise RunError("name at least one task number")
        lowest, highest = task_number_range()
        out_of_range = [n for n in numbers if not lowest <= n <= highest]
        if out_of_range:
            # The database can't even compare such a number (SQLite: OverflowError): no task has it.
            shown = str(out_of_range[0])
            shown = shown if len(shown) <= 30 else f"{shown[:12]}…({len(shown)} digits)"
            raise RunError(f"no task No.{shown} on the board: task numbers go from {lowest} to {highest}")
        if kind == "task" and len(numbers) != 1:
            raise RunError("scope 'task' takes exactly one task number")
        found = {t.number: t for t in Task.objects.filter(number__in=numbers)}
        missing = [n for n in numbers if n not in found]
        if missing:
            raise RunError(f"no task No.{', No.'.join(map(str, missing))} on the board")
        wrong = [found[n] for n in numbers if found[n].kernel != kernel]
        if wrong:
            raise RunError(
                f"No.{wrong[0].number} is a {wrong[0].kernel} task; its configs run on the "
                f"{wrong[0].kernel.lower()} lane, not {lane}")
        return [found[n] for n in dict.fromkeys(numbers)]
    if kind == "api":
        if not api:
            raise RunError("name an API, e.g. paddle.clip")
        found = list(Task.objects.filter(api=api, kernel=kernel))
        if not found:
            raise RunError(f"no {kernel} task for {api} on the board")
        return found
    if kind == "all":  # every task of the lane's kernel (the first start's re-test)
        return list(Task.objects.filter(kernel=kernel))
    # all_open: every task whose fix isn't completed yet (locked ones too: they still fail).
    return list(Task.objects.filter(kernel=kernel).exclude(status=TaskStatus.COMPLETED))


def known_releases() -> list[str]:
    """Releases some worker can run: this host's envs plus what fresh worker heartbeats advertise."""
    return sorted(set(paddle_envs.releases()) | set(advertised_releases()), key=paddle_envs.version_key)


def check_release(release: str) -> str:
    """The release a run is asked for, normalised ("" = main env); unknown → RunError naming what exists."""
    release = (release or "").strip()
    if not release:
        return ""
    if release not in known_releases():
        raise RunError(paddle_envs.unknown_release_message(release))
    return release


def parse_releases(value: str) -> list[str]:
    """--releases "all" | "3.0.0,3.3.1" → the releases, oldest first, each checked."""
    value = (value or "").strip()
    if value == "all":
        found = known_releases()
    else:
        found = [part for part in value.replace(" ", ",").split(",") if part]
    if not found:
        raise RunError("name at least one release (e.g. 3.0.0,3.3.1) or 'all'")
    for release in found:
        check_release(release)
    return sorted(dict.fromkeys(found), key=paddle_envs.version_key)


def create_run(kind: str, *, tasks=None, api: str | None = None, lane: str = "cpu", requested_by: str = "",
               release: str = "", parent: TestRun | None = None, configs: list[int] | None = None) -> TestRun:
    """``configs``: only these FailingConfig ids of the scope (a bisection probe lane), else all of them."""
    release = check_release(release)
    chosen = resolve_scope(kind, tasks=tasks, api=api, lane=lane)
    found = FailingConfig.objects.filter(task__in=chosen)
    total = found.filter(id__in=configs).count() if configs is not None else found.count()
    if total == 0:
        raise RunError("the scope has no failing configs to run (is the board imported?)")
    scope = {"kind": kind, "tasks": sorted(t.number for t in chosen)}
    if api:
        scope["api"] = api
    if configs is not None:
        scope["configs"] = sorted(configs)
    run = TestRun.objects.create(scope=scope, lane=lane, total=total, requested_by=requested_by, release=release,
                                 parent=parent)
    shards.ensure_shards(run)  # planned once, by the requester's RUNNER_SHARD_SIZE, before any executor sees it
    return run


BISECT, FULL = "bisect", "full"


def create_matrix_run(kind: str, *, releases: list[str], tasks=None, api: str | None = None, lane: str = "cpu",
                      requested_by: str = "", mode: str = FULL) -> TestRun:
    """One run of a scope on several releases: a parent run and child (lane) runs per release.

    ``full``: one lane per release. ``bisect``: lanes for the oldest and newest release only; when they are
    done, refresh_matrix plans the next round (tracker.bisection) for the configs whose ends differ.
    """
    releases = [check_release(r) for r in releases]
    if not releases:
        raise RunError("name at least one release")
    if mode not in (BISECT, FULL):
        raise RunError(f"unknown matrix mode {mode!r}: use {BISECT} or {FULL}")
    first = list(dict.fromkeys((releases[0], releases[-1]))) if mode == BISECT else releases
    with transaction.atomic():
        parent = TestRun.objects.create(scope={}, lane=lane, requested_by=requested_by, release=MATRIX)
        children = [create_run(kind, tasks=tasks, api=api, lane=lane, requested_by=requested_by, release=r,
                               parent=parent) for r in first]
        TestRun.objects.filter(pk=parent.pk).update(
            scope={**children[0].scope, "releases": releases, "mode": mode, "round": 1},
            total=sum(c.total for c in children))
    parent.refresh_from_db()
    return parent


def start_matrix_run(kind: str, *, releases: list[str], tasks=None, api=None, lane="cpu", requested_by="",
                     mode: str = FULL) -> TestRun:
    parent = create_matrix_run(kind, releases=releases, tasks=tasks, api=api, lane=lane, requested_by=requested_by,
                               mode=mode)
    for child in parent.lanes.order_by("id"):
        enqueue_run(child)
    return parent


def _outcome(status: str) -> str:
    """What bisection compares: the verdict's class (a fix turns failing into passing, whatever the failure)."""
    try:
        return status_class(status)
    except KeyError:
        return status


def matrix_observations(parent: TestRun) -> dict[int, dict[str, str]]:
    """config id -> {release: outcome} of the verdicts the matrix's lanes stored."""
    observed: dict[int, dict[str, str]] = {}
    for config_id, release, status in (ConfigResult.objects.filter(run__parent=parent)
                                       .values_list("failing_config_id", "run__release", "status")):
        observed.setdefault(config_id, {})[release] = _outcome(status)
    return observed


def plan_next_round(parent: TestRun) -> list[TestRun]:
    """A bisecting matrix whose lanes are all done: one new lane per release some config must be probed on
    (tracker.bisection.plan_group per task: a scout config first, the others guided by its change point).

    The round number in the parent's scope is compared and set in one UPDATE, so two lanes ending at once
    plan the next round once. Returns the new lanes (queued, not yet enqueued); [] when every change point
    is found.
    """
    scope = parent.scope
    releases = scope.get("releases") or []
    observations = matrix_observations(parent)
    configs = {fc["id"]: fc for fc in FailingConfig.objects.filter(pk__in=observations).values("id", "task_id", "config")}
    by_task: dict[int, dict[int, dict]] = {}
    for config_id in sorted(configs):  # a config deleted since its verdicts were read has nothing to probe
        by_task.setdefault(configs[config_id]["task_id"], {})[config_id] = observations[config_id]
    wanted: dict[str, list[int]] = {}
    for group in by_task.values():
        # a task's configs are bisected together: its cheapest config scouts the change point (input bytes)
        plan = bisection.plan_group(releases, group, cost=lambda config_id: config_bytes(configs[config_id]["config"]))
        for config_id, probes in plan.items():
            for release in probes:
                wanted.setdefault(release, []).append(config_id)
    if not wanted:
        return []
    round_now = scope.get("round", 1)
    with transaction.atomic():
        if not TestRun.objects.filter(pk=parent.pk, scope__round=round_now).update(
                scope={**scope, "round": round_now + 1}):
            return []  # another lane's ending planned it
        return [create_run("tasks", tasks=scope.get("tasks"), lane=parent.lane, requested_by=parent.requested_by,
                           release=release, parent=parent, configs=ids)
                for release, ids in sorted(wanted.items(), key=lambda item: paddle_envs.version_key(item[0]))]


def refresh_matrix(parent: TestRun) -> None:
    """A matrix parent's totals and state follow its children (called when a child ends or is cancelled);
    a bisecting matrix whose lanes are all done queues its next round of probes first."""
    children = list(parent.lanes.all())
    if not children:
        return
    parent.refresh_from_db()
    states = {c.state for c in children}
    if parent.scope.get("mode") == BISECT and states == {TestRun.State.DONE}:
        new = plan_next_round(parent)
        for child in new:
            enqueue_run(child)
        children += new
        states = {c.state for c in children}
    fields = {"total": sum(c.total for c in children), "done": sum(c.done for c in children)}
    if states & {TestRun.State.RUNNING}:
        fields["state"] = TestRun.State.RUNNING
    elif states <= {TestRun.State.DONE, TestRun.State.CANCELLED, TestRun.State.FAILED}:
        fields["state"] = (TestRun.State.DONE if states == {TestRun.State.DONE} else
                           TestRun.State.FAILED if TestRun.State.FAILED in states else TestRun.State.CANCELLED)
        fields["finished_at"] = max((c.finished_at for c in children if c.finished_at), default=timezone.now())
    TestRun.objects.filter(pk=parent.pk).update(**fields)


def start_run(kind: str, *, tasks=None, api=None, lane="cpu", requested_by="") -> TestRun:
    """Create and enqueue for the lane's qcluster."""
    run = create_run(kind, tasks=tasks, api=api, lane=lane, requested_by=requested_by)
    enqueue_run(run)
    return run


def cancel_run(run: TestRun, *, by: str = "") -> bool:
    """Cancel a queued or running run (a matrix run: every lane of it); its executor sees the state and stops."""
    ids = [run.pk, *run.lanes.values_list("pk", flat=True)]
    updated = TestRun.objects.filter(pk__in=ids, state__in=ACTIVE_STATES).update(
        state=TestRun.State.CANCELLED, finished_at=timezone.now(),
        message=f"cancelled by {by}" if by else "cancelled")
    if run.parent_id:
        refresh_matrix(run.parent)
    run.refresh_from_db()
    return bool(updated)


# ----------------------------------------------------------------------------- executing


def executor_dead(run: TestRun, *, now=None) -> bool:
    """True when the run's executor of record is gone: its process on this host has exited, or it fell silent."""
    now = now or timezone.now()
    if shards.process_gone(run.executor):
        return True
    return run.heartbeat_at is None or now - run.heartbeat_at > stale_after()


def _claim(run: TestRun, me: str) -> str | None:
    """Start the run ("started": queued → running, `me` its executor of record), or join it while it runs
    ("joined": shards are shared, each one leased by one executor); None when it is no longer active."""
    now = timezone.now()
    fields = {"state": TestRun.State.RUNNING, "executor": me, "heartbeat_at": now}
    if TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(**fields):
        return "started"
    run.refresh_from_db()
    return "joined" if run.state == TestRun.State.RUNNING else None


def _float(value):
    """Finite float or None (the engine encodes NaN/inf as strings; the message keeps them)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _seconds(value) -> float:
    """A duration a worker reported: a finite number ≥ 0, else 0 (it is a figure, never a reason to lose the
    verdict)."""
    return max(_float(value) or 0.0, 0.0)


def _diff_map(verdict: dict) -> dict | None:
    """The engine's |paddle − torch| grid plus its NaN/inf-mismatch mask, as the task page draws them."""
    if verdict.get("diff_map") is None:
        return None
    return {"values": verdict["diff_map"], "mask": verdict.get("diff_map_nonfinite"),
            "shape": verdict.get("diff_shape"), "output": verdict.get("output")}


def _layers(verdict: dict) -> dict:
    """The strict and adapted layers of an engine verdict as ConfigResult fields.

    A verdict without layers (the runner's crash / timeout, an older engine) is its own strict layer.
    """
    strict = verdict.get("strict") or {}
    adapted = verdict.get("adapted") or {}
    return {
        "strict_status": strict.get("status") or verdict.get("status", Status.UNSUPPORTED),
        "strict_direction": (strict.get("direction") if strict else verdict.get("direction")) or "",
        "adapted_status": adapted.get("status") or "",
        "adapted_direction": adapted.get("direction") or "",
        "adapted_max_abs": _float(adapted.get("max_abs")),
        "adapted_max_rel": _float(adapted.get("max_rel")),
        "adapted_mismatched": adapted.get("mismatched"),
        "adapted_message": (adapted.get("message") or "")[:5000],
        "adaptations": list(verdict.get("adaptations") or []),
        "evidence": (verdict.get("evidence") or "")[:2000],
        "known_failure": _spec_note(verdict.get("known_failure")),
        "comparison": _spec_note(verdict.get("comparison")),
    }


def _spec_note(note) -> dict | None:
    """The spec's known-failure / comparison entry as stored: short plain values only (a worker sends JSON)."""
    if not isinstance(note, dict):
        return None
    kept = {}
    for key, value in list(note.items())[:10]:
        if isinstance(value, list):
            value = [str(v)[:40] for v in value[:10]]
        elif value is not None:
            value = str(value)[:1000]
        kept[str(key)[:40]] = value
    return kept


class WrongBuild(RuntimeError):
    """A verdict from a Paddle build other than the run's release: never stored."""


def expected_paddle(run: TestRun) -> str:
    return run.release or paddle_envs.main_version()


def check_build(run: TestRun, build: dict) -> None:
    expected = expected_paddle(run)
    got = (build or {}).get("paddle_version", "")
    if expected and got != expected:
        raise WrongBuild(f"run {run.pk} is for Paddle {expected} but the worker runs Paddle {got or 'unknown'}")


_BIGINT = (-2**63, 2**63 - 1)  # what a BigIntegerField column holds on every backend


def bigint_or_none(value):
    """An integer a BigIntegerField column holds, or None (an absurd shape's element count fits no column)."""
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if _BIGINT[0] <= number <= _BIGINT[1] else None


def _result_fields(verdict: dict, seconds) -> dict:
    """ConfigResult fields of one verdict (the engine's, or a pool-made one of the same shape)."""
    message = verdict.get("message") or ""
    extras = []
    for key in ("max_abs", "max_rel"):
        if isinstance(verdict.get(key), str):  # "nan" / "inf" / "-inf"
            extras.append(f"{key}={verdict[key]}")
    if verdict.get("output"):
        extras.append(f"output: {verdict['output']}")
    if extras:
        message = (message + "\n" if message else "") + "; ".join(extras)
    return dict(
        status=str(verdict.get("status") or "unsupported")[:30], direction=str(verdict.get("direction") or "")[:10],
        statistical=bool(verdict.get("statistical")), max_abs=_float(verdict.get("max_abs")),
        max_rel=_float(verdict.get("max_rel")), mismatched=bigint_or_none(verdict.get("mismatched")),
        total_elements=bigint_or_none(verdict.get("total")), worst_index=verdict.get("worst_index"),
        message=str(message)[:5000], seconds=_seconds(seconds),
        framework_seconds=_seconds(verdict.get("framework_seconds")), diff_map=_diff_map(verdict),
        draw=_draw_text(verdict.get("draw")), **_layers(verdict),
    )


def _draw_text(draw) -> str:
    """The verdict's draw as the CLI's --draw text ("edge:0@2": with its format, so a replay draws the same values
    after the engine's next format); "" for none, as for format 1's typical draw (the column's meaning then)."""
    if not isinstance(draw, dict):
        return ""
    try:
        text = str(Draw.parse(draw))[:40]
    except ValueError:
        return ""
    return "" if text == "typical:0" else text


def _unstorable(verdict, exc: Exception) -> dict:
    """The verdict stored instead of one the runner could not store: an engine gap, with the reason."""
    status = verdict.get("status") if isinstance(verdict, dict) else None
    return {"status": "unsupported",
            "message": f"runner error: the verdict{f' ({status!r})' if status else ''} could not be stored: "
                       f"{type(exc).__name__}: {str(exc)[:300]}"}


def store_result(run: TestRun, failing_config: FailingConfig, verdict: dict, seconds: float, attempts: int = 1,
                 build: dict | None = None):
    """Write one config's verdict; a second write for the same (run, config) is ignored.

    ``build`` is the worker's {paddle_version, paddle_commit, torch_version}; it must be the run's release
    (the executor always passes it; None only for verdicts that no worker produced, e.g. synthetic data).
    A verdict that can't be read or stored (a value no column holds) is stored as that config's
    ``unsupported`` with the reason: one config never stops the run.
    """
    if build is not None:
        check_build(run, build)
    build = build or {}
    versions = {"paddle_version": str(build.get("paddle_version", ""))[:50],
                "paddle_commit": str(build.get("paddle_commit", ""))[:64],
                "torch_version": str(build.get("torch_version", ""))[:50]}

    def create(fields):
        try:
            with transaction.atomic():
                return ConfigResult.objects.create(run=run, failing_config=failing_config,
                                                   task_id=failing_config.task_id, **versions, **fields)
        except IntegrityError:
            return None

    try:
        fields = _result_fields(verdict, seconds)
    except Exception as exc:  # a verdict of an unexpected shape
        return create(_result_fields(_unstorable(verdict, exc), 0.0))
    try:
        return create(fields)
    except (DataError, OverflowError, ValueError, TypeError) as exc:  # a value its column can't hold
        return create(_result_fields(_unstorable(verdict, exc), 0.0))


@dataclass
class ExecutionReport:
    run_id: int
    state: str
    executed: int = 0  # configs this call ran (a resume runs only the ones without a result)
    skipped_existing: int = 0
    shards_finished: int = 0  # shards this call leased and finished
    worker_seconds: float = 0.0
    wall_seconds: float = 0.0
    statuses: dict = field(default_factory=dict)


def execute_run(run_id: int, *, workers: int | None = None, options: dict | None = None,
                fan_out: bool = False) -> ExecutionReport:
    """Work on the run until none of its shards is left to lease; returns what this call did.

    Safe to call twice or concurrently, from several hosts: each shard is leased by one executor at a time,
    and only configs without a result run. ``fan_out`` (the queued job's): the executor that starts the run
    puts one more job per remaining shard on the lane's queue, so other qclusters join in. The in-process
    path (``retest --inline``) leaves it off and works through every shard itself.
    """
    started = time.monotonic()
    run = TestRun.objects.get(pk=run_id)
    report = ExecutionReport(run_id, run.state)
    if run.state not in ACTIVE_STATES:
        return report
    if run.lanes.exists():
        return report  # a matrix parent: its lanes are the runs that execute
    try:
        python = paddle_envs.interpreter_for(run.release)
    except paddle_envs.EnvError:
        # Not a release this host has: leave it queued for a worker that has it (never the wrong build).
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            message=f"{RELEASE_DECLINED} {run.release} (this host has: {', '.join(paddle_envs.releases())})")
        report.state = TestRun.objects.get(pk=run.pk).state
        return report
    shards.ensure_shards(run)
    if not shards.has_work(run):
        # Every shard is done or held by a live executor (e.g. a job of the fan-out arriving late).
        _finish_if_complete(run, report)
        return report
    me = executor_name()
    mark_dequeued(run, me)

    opts = {**pool_options(), "python": python, **(options or {})}
    try:
        return _execute(run, me, report, started, workers, opts, fan_out)
    except PoolError as exc:
        # Paddle/torch can't even start here (e.g. a broken env): say so on the run, store nothing.
        TestRun.objects.filter(pk=run.pk, state__in=ACTIVE_STATES).update(
            state=TestRun.State.FAILED, finished_at=timezone.now(), message=f"workers could not start: {exc}")
        report.state = TestRun.State.FAILED
        if run.parent_id:
            refresh_matrix(run.parent)
        return report
    except Exception as exc:
        # Not one config's doing (those become verdicts): the run is left to the stale sweep, which re-queues
        # it now (no heartbeat) and ends it `failed` after RUNNER_MAX_REQUEUES; its page says why meanwhile.
        log.exception("run %s: the executor stopped", run.pk)
        TestRun.objects.filter(pk=run.pk, state__in=ACTIVE_STATES, executor=me).update(
            heartbeat_at=None, message=f"{EXECUTOR_ERROR}: {type(exc).__name__}: {str(exc)[:500]}")
        report.state = TestRun.objects.get(pk=run.pk).state
        return report


def _declined(run: TestRun, info: dict, build: dict) -> bool:
    """This pool can't give the run's verdicts (a CPU build on the GPU lane, another Paddle release): say so on
    a queued run and leave it to a worker that can; True when declined."""
    if run.lane == TestRun.Lane.GPU and not info.get("cuda"):
        # Never a GPU verdict from a CPU build. Its queue message is consumed now, so the message below marks
        # the run for requeue_declined_gpu_runs().
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            executor="", heartbeat_at=None,
            message=f"{GPU_DECLINED} (this worker's Paddle {info.get('paddle_version')} is CPU-only)")
        return True
    try:
        check_build(run, build)
    except WrongBuild as exc:
        TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
            message=f"{RELEASE_DECLINED} {expected_paddle(run)} ({exc})")
        return True
    return False


def _start(run: TestRun, info: dict, fan_out: bool) -> None:
    """The executor that moved the run from queued to running records the build and, for a queued job, puts
    one job per further shard on the lane's queue (each job leases shards until none is left)."""
    done = ConfigResult.objects.filter(run=run).count()
    TestRun.objects.filter(pk=run.pk).update(
        paddle_version=info.get("paddle_version", ""), paddle_commit=info.get("paddle_commit", ""),
        torch_version=info.get("torch_version", ""), host=socket.gethostname(),
        started_at=run.started_at or timezone.now(), total=run_configs(run).count(), done=done, message="")
    if run.parent_id:
        refresh_matrix(run.parent)
    if fan_out:
        for _ in range(shards.queued_count(run) - 1):
            enqueue_run(run)


def _execute(run: TestRun, me: str, report: ExecutionReport, started: float, workers, opts,
             fan_out: bool) -> ExecutionReport:
    with warm_pool(settings.RUNNER_WARM_POOLS, workers or runner_workers(), device=run.lane, **opts) as pool:
        # Its first ready worker's build; check_build refuses a build other than the run's release.
        info = pool.wait_ready()
        if _declined(run, info, pool.build):
            report.state = TestRun.objects.get(pk=run.pk).state
            return report
        claimed = _claim(run, me)
        if claimed is None:
            report.state = TestRun.objects.get(pk=run.pk).state
            return report
        report.skipped_existing = ConfigResult.objects.filter(run=run).count()
        if claimed == "started":
            _start(run, info, fan_out)
        _run_shards(run, me, pool, report)
    _finish_if_complete(run, report)
    report.wall_seconds = time.monotonic() - started
    return report


class _HeldShards:
    """The shards an executor holds while its pool works through them. The next shard is leased when the pool has
    sent every config it has and a worker is free, so no worker waits at a shard's end for the shard's slowest
    config (one shard at a time idled a worker for about half a config at each of a lane's shard ends)."""

    def __init__(self, run: TestRun, me: str, report: ExecutionReport):
        self.run, self.me, self.report = run, me, report
        self.held: dict[int, RunShard] = {}
        self.open: dict[int, set[int]] = {}      # shard id -> its configs without a stored verdict
        self.shard_of: dict[int, int] = {}       # config id -> shard id
        self.by_id: dict[int, FailingConfig] = {}
        self.last_beat = time.monotonic()
        self.stopped = False

    def lease(self) -> list[tuple[int, str]]:
        """The next shard's configs that have no result yet ([] when no shard is left, or after a stop); a leased
        shard with none left is finished on the spot."""
        while not self.stopped and (shard := shards.lease_next(self.run, self.me)) is not None:
            # The newest leaser is the run's executor of record: alive whenever anyone is still working on it,
            # so the sweep never sends a run back to `queued` under a live executor between two of its shards.
            TestRun.objects.filter(pk=self.run.pk, state=TestRun.State.RUNNING).update(executor=self.me)
            done_ids = set(ConfigResult.objects.filter(run=self.run, failing_config_id__in=shard.config_ids)
                           .values_list("failing_config_id", flat=True))
            by_id = {fc.id: fc for fc in FailingConfig.objects.filter(pk__in=shard.config_ids)}
            pending = [by_id[i] for i in shard.config_ids if i in by_id and i not in done_ids]
            if not pending:
                self._finish(shard)
                continue
            self.held[shard.pk], self.open[shard.pk] = shard, {fc.id for fc in pending}
            for fc in pending:
                self.shard_of[fc.id], self.by_id[fc.id] = shard.pk, fc
            return [(fc.id, fc.config) for fc in pending]
        return []

    def should_stop(self) -> bool:
        """Lease renewal (the heartbeat) and cancel check, every few seconds even while a slow config runs: stop
        when the run is no longer running or a held shard's lease was lost."""
        if time.monotonic() - self.last_beat < 2.0:
            return self.stopped
        self.last_beat = time.monotonic()
        held = [shards.renew(shard, self.me) for shard in self.held.values()]  # every one, not up to a loss
        TestRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())
        state = TestRun.objects.values_list("state", flat=True).get(pk=self.run.pk)
        self.stopped = self.stopped or not all(held) or state != TestRun.State.RUNNING
        return self.stopped

    def stored(self, config_id: int) -> None:
        """The config's verdict is stored: its shard is finished when it was the shard's last."""
        shard_id = self.shard_of.pop(config_id)
        self.open[shard_id].discard(config_id)
        if not self.open[shard_id]:
            del self.open[shard_id]
            self._finish(self.held.pop(shard_id))

    def _finish(self, shard: RunShard) -> None:
        if shards.finish(shard, self.me):
            self.report.shards_finished += 1
        else:
            self.stopped = True  # the lease was lost: another executor has the shard now


def _run_shards(run: TestRun, me: str, pool: WorkerPool, report: ExecutionReport) -> None:
    """Lease shards and run their configs until none is left, the run is cancelled or a lease is lost (what the
    pool had in flight is then abandoned with it)."""
    held = _HeldShards(run, me, report)
    progress = _Progress(run)
    try:
        # Grouped by task: in the first shard every task's smallest config comes first (pool.dispatch_order).
        for result in pool.run(held.lease(), should_stop=held.should_stop, more=held.lease,
                               group_of=lambda fc_id: held.by_id[fc_id].task_id):
            if held.should_stop():
                return
            if store_result(run, held.by_id[result.key], result.verdict, result.seconds, result.attempts,
                            build=result.build or pool.build):
                report.executed += 1
                report.worker_seconds += result.seconds
                report.statuses[result.status] = report.statuses.get(result.status, 0) + 1
                progress.stored()
            held.stored(result.key)
            if held.stopped:
                return
    finally:
        progress.write()


class _Progress:
    """The run's ``done`` count, written at most every PROGRESS_SECONDS while verdicts are stored and once when the
    executor stops. The count is the run's results (COUNT, right whichever executors stored them), and counting a
    lane of 3,292 configs after every verdict was a quarter of the executor's CPU in the release matrix
    (2026-12-05), time taken from the workers on a 2-core host."""

    PROGRESS_SECONDS = 1.0

    def __init__(self, run: TestRun):
        self.run = run
        self.unwritten = False
        self.written_at = -math.inf

    def stored(self) -> None:
        self.unwritten = True
        if time.monotonic() - self.written_at >= self.PROGRESS_SECONDS:
            self.write()

    def write(self) -> None:
        if not self.unwritten:
            return
        # A stored verdict is progress: the sweep's count of re-queues in a row starts again.
        TestRun.objects.filter(pk=self.run.pk).update(
            done=ConfigResult.objects.filter(run=self.run).count(), heartbeat_at=timezone.now(), requeues=0)
        self.unwritten, self.written_at = False, time.monotonic()


def _finish_if_complete(run: TestRun, report: ExecutionReport) -> None:
    """The run is done once every shard is: the executor whose conditional UPDATE wins records the outcome."""
    run.refresh_from_db()
    # Queued too: an executor that died after finishing the last shard leaves a run the sweep re-queued.
    if run.state in ACTIVE_STATES and shards.all_done(run):
        done = ConfigResult.objects.filter(run=run).count()
        if TestRun.objects.filter(pk=run.pk, state=run.state).update(
                state=TestRun.State.DONE, finished_at=timezone.now(), done=done):
            run.refresh_from_db()
            record_run_outcomes(run)
    if run.parent_id:
        refresh_matrix(run.parent)
    report.state = TestRun.objects.get(pk=run.pk).state


def requeue_declined_gpu_runs(*, enqueue: bool = True) -> list[int]:
    """GPU runs whose queue message a CPU-only cluster consumed (a CPU host started on the GPU queue) and
    declined go back on the GPU queue; a worker that can serve the GPU lane calls this when it starts.
    Without it such a run would stay queued forever: no message is left for any GPU worker to receive."""
    requeued = []
    for run in TestRun.objects.filter(lane=TestRun.Lane.GPU, state=TestRun.State.QUEUED,
                                      message__startswith=GPU_DECLINED):
        # Conditional on the message we saw, so two starting workers don't both enqueue it.
        if TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED, message=run.message).update(
                message="requeued for a GPU worker"):
            requeued.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return requeued


def requeue_declined_release_runs(releases: list[str], *, enqueue: bool = True) -> list[int]:
    """Runs a worker without their Paddle release declined go back on the queue when a worker that has
    the release starts (their queue message was consumed by the declining worker)."""
    requeued = []
    for run in TestRun.objects.filter(state=TestRun.State.QUEUED, release__in=releases,
                                      message__startswith=RELEASE_DECLINED):
        if TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED, message=run.message).update(
                message=f"requeued for a worker with Paddle {run.release}"):
            requeued.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return requeued


def mark_dequeued(run: TestRun, me: str) -> bool:
    """A queued run's job was taken off the queue by `me`, which now starts its workers.

    Starting Paddle and Torch takes a while; if this process dies before it claims the run, the job is
    gone (Redis has no acknowledgement) and the run would stay `queued` for ever. The mark lets the
    resume sweep see that: a queued run marked by a dead executor is queued again.
    """
    return bool(TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED).update(
        executor=me, heartbeat_at=timezone.now()))


def _requeue_or_fail(run: TestRun, why: str, **requeue_fields) -> str | None:
    """The stale sweep's step for one orphaned run: back on the queue ("requeued"), or `failed` ("failed") once it
    was re-queued RUNNER_MAX_REQUEUES times in a row without a new verdict; None when another sweeper won.

    Conditional on the state, executor and heartbeat we judged dead, so two sweepers don't both act. ``why`` is
    the re-queue message; an executor error left on the run is kept in it, so the page says what happened.
    """
    judged = TestRun.objects.filter(pk=run.pk, state=run.state, executor=run.executor, heartbeat_at=run.heartbeat_at)
    error = run.message if run.message.startswith(EXECUTOR_ERROR) else ""
    if run.requeues >= max_requeues():
        message = (f"failed: the stale sweep re-queued this run {run.requeues} times in a row and its executor "
                   f"({run.executor or 'unknown'}) stopped again without storing a verdict"
                   f"{f' — {error}' if error else ''}. Limit: RUNNER_MAX_REQUEUES={max_requeues()}.")
        if not judged.update(state=TestRun.State.FAILED, finished_at=timezone.now(), message=message[:5000]):
            return None
        log.warning("run %s: %s", run.pk, message)
        if run.parent_id:
            refresh_matrix(run.parent)
        return "failed"
    message = f"{why} ({error})" if error else why
    if not judged.update(requeues=F("requeues") + 1, message=message[:5000], **requeue_fields):
        return None
    return "requeued"


def requeue_lost_queued_runs(*, enqueue: bool = True) -> list[int]:
    """Queued runs whose job a worker took off the queue and then died before starting: queued again."""
    requeued = []
    for run in TestRun.objects.filter(state=TestRun.State.QUEUED).exclude(executor=""):
        if not executor_dead(run):
            continue
        outcome = _requeue_or_fail(run, f"queued again: worker {run.executor} died after taking its job off the queue",
                                   executor="", heartbeat_at=None)
        if outcome == "requeued":
            requeued.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return requeued


def resend_unclaimed_runs(lanes: list[str], releases: list[str], *, enqueue: bool = True, now=None) -> list[int]:
    """Queued runs of these lanes and releases whose job nobody has taken off the queue (no dequeue mark) for
    RUNNER_QUEUED_RESEND_SECONDS since it was last sent: their job is put on the lane's queue again.

    A job can be lost without a trace: a qcluster's pusher takes jobs off the broker while its worker is busy, and
    a cluster killed then takes them with it (Redis never redelivers; the ORM broker only after Q_RETRY). The
    duplicate job this sends when the first one was merely waiting behind others is a no-op: starting a run is an
    atomic UPDATE (queued → running, see _claim), and a job for a started run only leases shards nobody holds.
    Not a re-queue for RUNNER_MAX_REQUEUES: no executor ran. Conditional on the ``sent_at`` seen, so two
    workers' heartbeat rounds send it once per interval. Called by every worker's heartbeat round with what it
    serves, so a run is only re-sent while a worker that can run it is alive (no pile of jobs nobody consumes).
    """
    now = now or timezone.now()
    cutoff = now - queued_resend_after()
    waiting = (TestRun.objects.filter(state=TestRun.State.QUEUED, executor="", lane__in=lanes,
                                      release__in=["", *releases])
               .exclude(release=MATRIX)
               .filter(Q(sent_at__lte=cutoff) | Q(sent_at__isnull=True, created__lte=cutoff)))
    resent = []
    for run in waiting:
        since = run.sent_at or run.created
        waited = int((now - since).total_seconds())
        fields = {"sent_at": now}
        # Any other message stays (a decline's is what requeue_declined_*_runs look for; a re-queue's says why).
        if not run.message or run.message.startswith(RESENT):
            fields["message"] = f"{RESENT}: queued {waited} s with no worker taking it off the queue"
        if not TestRun.objects.filter(pk=run.pk, state=TestRun.State.QUEUED, executor="",
                                      sent_at=run.sent_at).update(**fields):
            continue  # taken meanwhile, or another worker sent it
        log.info("run %s: queued %s s with no worker taking its job: its job is sent to the %s lane's queue again",
                 run.pk, waited, run.lane)
        resent.append(run.pk)
        if enqueue:
            enqueue_run(run)
    return resent


def resume_orphaned_runs(*, enqueue: bool = True) -> list[int]:
    """Work a dead executor left behind goes back on the queue: the lapsed shards of a run other executors are
    still working on (one job per shard), a run left `running` with no live executor (back to `queued`), and
    queued runs whose job a dead worker had taken off the queue before starting them. A run that keeps losing
    its executor without storing a verdict ends `failed` instead (see _requeue_or_fail)."""
    resumed = requeue_lost_queued_runs(enqueue=enqueue)
    # A matrix parent has no executor or shard of its own (refresh_matrix keeps its state): its lanes are judged.
    for run in TestRun.objects.filter(state=TestRun.State.RUNNING).exclude(release=MATRIX):
        if shards.live_lease(run):
            if _requeue_lapsed_shards(run, enqueue=enqueue):
                resumed.append(run.pk)
            continue
        if not executor_dead(run):
            continue
        stopped = "stopped" if run.message.startswith(EXECUTOR_ERROR) else "died"
        # Queued without its dead executor's name, or the next sweep takes it for a lost job and queues it twice.
        outcome = _requeue_or_fail(run, f"resumed after its executor {run.executor} {stopped}",
                                   state=TestRun.State.QUEUED, executor="", heartbeat_at=None)
        if outcome == "requeued":
            shards.requeue_lapsed(run)
            resumed.append(run.pk)
            if enqueue:
                enqueue_run(run)
    return resumed


def _requeue_lapsed_shards(run: TestRun, *, enqueue: bool) -> list[int]:
    """A run still worked on by a live executor: its lapsed shards only go back, each with a job of its own
    (an idle qcluster takes it; a live executor of the run takes it over anyway when it runs out of shards)."""
    requeued = shards.requeue_lapsed(run)
    if requeued:
        log.info("run %s: shards %s re-queued, their executor is gone", run.pk, requeued)
    for _ in requeued if enqueue else []:
        enqueue_run(run)
    return requeued


# ----------------------------------------------------------------------------- outcomes


def record_run_outcomes(run: TestRun) -> None:
    """Events for fixes verified and regressions found by this run (once per task and version), for the tasks of
    the run's lane only: a GPU task's configs run on the cpu lane are CPU evidence, never a GPU outcome."""
    kernel = _lane_kernel(run.lane)
    tasks = Task.objects.filter(number__in=run.scope.get("tasks", []), kernel=kernel)
    for task in tasks:
        verification = task_verification(task, run.lane)
        if verification.kind == "verified" and not task.events.filter(
                kind=EventKind.FIX_VERIFIED, data__lane=run.lane, data__paddle_version=verification.paddle_version).exists():
            record_event(task=task, kind=EventKind.FIX_VERIFIED, source=Source.RUN, source_ref=f"run {run.pk}",
                         message=verification.text, data={"lane": run.lane, "run": run.pk,
                                                          "paddle_version": verification.paddle_version})
    for item in (r for r in regressions(lane=run.lane, run=run) if r.task.kernel == kernel):
        record_event(task=item.task, kind=EventKind.REGRESSION, source=Source.RUN, source_ref=f"run {run.pk}",
                     message=f"config {item.failing_config_id} passed in run {item.passed_run_id} "
                             f"(Paddle {item.passed_version}) and is {item.status} in run {item.failed_run_id} "
                             f"(Paddle {item.failed_version})",
                     data={"lane": run.lane, "run": run.pk, "failing_config": item.failing_config_id,
                           "passed_run": item.passed_run_id, "status": item.status})
