"""Matrix runs: one scope on several Paddle releases, a parent run with one lane (child run) per release. A bisecting
matrix plans its next round of probe lanes (tracker.bisection) when its lanes are done; the parent's totals and state
follow its lanes."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apitester.builds import version_key
from apitester.pool import estimate_bytes as config_bytes

from ... import bisection
from ...models import ConfigResult, FailingConfig, TestRun
from ...vocab import ACTIVE_RUN_STATES, Lane, ScopeKind, WaitingReason
from ..queue import enqueue_run
from .create import create_run
from .scope import RunError, check_paddle_flags, check_release

# The release of a matrix run's parent (its children carry the real releases).
MATRIX = "matrix"

# A matrix run's modes: probe the oldest and newest release, then bisect between them; or run every release.
BISECT = "bisect"
FULL = "full"


def create_matrix_run(kind: str, *, releases: list[str], tasks=None, api: str | None = None, lane: str = Lane.CPU,
                      requested_by: str = "", mode: str = FULL, paddle_flags=None, readings: bool = False,
                      threads: int = 1) -> TestRun:
    """One run of a scope on several releases: a parent run and child (lane) runs per release.

    ``paddle_flags`` (create_run's): checked against every release's Paddle before anything is created; every
    lane, the probe lanes of later bisection rounds too, runs with them.

    ``full``: one lane per release. ``bisect``: lanes for the oldest and newest release only; when they are
    done, refresh_matrix plans the next round (tracker.bisection) for the configs whose ends differ.
    """
    releases = [check_release(r) for r in releases]
    if not releases:
        raise RunError("name at least one release")
    if mode not in (BISECT, FULL):
        raise RunError(f"unknown matrix mode {mode!r}: use {BISECT} or {FULL}")
    flags = check_paddle_flags(paddle_flags, releases)
    first = list(dict.fromkeys((releases[0], releases[-1]))) if mode == BISECT else releases
    with transaction.atomic():
        parent = TestRun.objects.create(scope={}, lane=lane, requested_by=requested_by, release=MATRIX,
                                        paddle_flags=flags, readings=readings, threads=threads)
        children = [create_run(kind, tasks=tasks, api=api, lane=lane, requested_by=requested_by, release=r,
                               parent=parent, paddle_flags=flags, flags_checked=True, readings=readings,
                               threads=threads)
                    for r in first]
        TestRun.objects.filter(pk=parent.pk).update(
            scope={**children[0].scope, "releases": releases, "mode": mode, "round": 1},
            total=sum(c.total for c in children))
    parent.refresh_from_db()
    return parent


def start_matrix_run(kind: str, *, releases: list[str], tasks=None, api=None, lane=Lane.CPU, requested_by="",
                     mode: str = FULL, paddle_flags=None, readings: bool = False) -> TestRun:
    parent = create_matrix_run(kind, releases=releases, tasks=tasks, api=api, lane=lane, requested_by=requested_by,
                               mode=mode, paddle_flags=paddle_flags, readings=readings)
    for child in parent.lanes.order_by("id"):
        enqueue_run(child)
    return parent


def matrix_observations(parent: TestRun) -> dict[int, dict[str, str]]:
    """config id -> {release: outcome} of the verdicts the matrix's lanes stored."""
    observed: dict[int, dict[str, str]] = {}
    for config_id, release, status in (ConfigResult.objects.filter(run__parent=parent)
                                       .values_list("failing_config_id", "run__release", "status")):
        observed.setdefault(config_id, {})[release] = bisection.outcome(status)
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
        return [create_run(ScopeKind.TASKS, tasks=scope.get("tasks"), lane=parent.lane, requested_by=parent.requested_by,
                           release=release, parent=parent, configs=ids, paddle_flags=parent.paddle_flags,
                           flags_checked=True, readings=parent.readings, threads=parent.threads or 1)
                for release, ids in sorted(wanted.items(), key=lambda item: version_key(item[0]))]


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


def cancel_run(run: TestRun, *, by: str = "") -> bool:
    """Cancel a queued or running run (a matrix run: every lane of it); its executor sees the state and stops."""
    ids = [run.pk, *run.lanes.values_list("pk", flat=True)]
    updated = TestRun.objects.filter(pk__in=ids, state__in=ACTIVE_RUN_STATES).update(
        state=TestRun.State.CANCELLED, finished_at=timezone.now(), waiting=WaitingReason.NONE,
        message=f"cancelled by {by}" if by else "cancelled")
    if run.parent_id:
        refresh_matrix(run.parent)
    run.refresh_from_db()
    return bool(updated)
