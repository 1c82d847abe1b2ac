"""A run's shards: slices of its configs that any executor serving the run's lane leases one at a time.

One run is one row; its work is `RunShard` rows made the first time an executor picks the run up, in the
run's dispatch order (`apitester.pool.dispatch_order`, grouped by task), so shard 0 opens with each task's
smallest config and first verdicts stay fast. Every write here is one conditional UPDATE — atomic on SQLite
and on PostgreSQL alike — so two executors never hold one shard:

* ``lease_next``: a queued shard (lowest index first), or one whose lease has lapsed (its owner's process is
  gone on this host, or it missed renewing for RUNNER_STALE_SECONDS), taken over conditional on the owner
  and expiry we saw;
* ``renew``: the holder pushes ``lease_expires`` forward (the executor's heartbeat, every ~2 s);
* ``finish``: the holder marks it done;
* ``requeue_lapsed``: the stale sweep puts lapsed shards back to ``queued``.

A shard taken over runs only its configs without a ConfigResult; the (run, config) unique constraint is the
last line of defence against a duplicate.
"""
from __future__ import annotations

import os
import socket
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apitester.pool import config_elements, dispatch_order

from ..models import RunShard, TestRun
from ..selectors.runs import run_configs

State = RunShard.State


def shard_size() -> int:
    return settings.RUNNER_SHARD_SIZE


def lease_duration() -> timedelta:
    """A lease not renewed for this long has lapsed: the same silence that makes a run's executor dead."""
    return timedelta(seconds=settings.RUNNER_STALE_SECONDS)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # A killed process nobody has reaped yet (a zombie) still answers kill(pid, 0).
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def process_gone(owner: str) -> bool:
    """True when `owner` ("host:pid") is a process of this host that has exited (another host's: unknown)."""
    host, _, pid = owner.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not pid_alive(int(pid))


def lapsed(shard: RunShard, *, now=None) -> bool:
    """A leased shard whose holder is gone: its process exited here, or it stopped renewing the lease."""
    if shard.state != State.LEASED:
        return False
    now = now or timezone.now()
    return process_gone(shard.lease_owner) or shard.lease_expires is None or shard.lease_expires < now


def planned_shards(run: TestRun) -> list[list[int]]:
    """The run's config ids in dispatch order, cut into shards of RUNNER_SHARD_SIZE."""
    configs = list(run_configs(run).values_list("id", "config", "task_id"))
    ordered = dispatch_order(configs, size_of=lambda row: config_elements(row[1]), group_of=lambda row: row[2])
    ids = [row[0] for row in ordered]
    size = shard_size()
    return [ids[start:start + size] for start in range(0, len(ids), size)]


def ensure_shards(run: TestRun) -> int:
    """Make the run's shards unless they exist; returns how many it has. Two executors racing: one wins."""
    existing = RunShard.objects.filter(run=run).count()
    if existing:
        return existing
    plan = planned_shards(run)
    try:
        with transaction.atomic():
            RunShard.objects.bulk_create(RunShard(run=run, index=i, config_ids=ids) for i, ids in enumerate(plan))
    except IntegrityError:  # another executor made them first (unique run + index)
        pass
    return RunShard.objects.filter(run=run).count()


def _take(shard: RunShard, me: str, **seen) -> bool:
    now = timezone.now()
    return bool(RunShard.objects.filter(pk=shard.pk, **seen).update(
        state=State.LEASED, lease_owner=me, lease_expires=now + lease_duration(), attempts=shard.attempts + 1))


def lease_next(run: TestRun, me: str) -> RunShard | None:
    """Lease the run's next shard for `me`: a queued one, else one whose lease lapsed; None when none is left."""
    for shard in RunShard.objects.filter(run=run, state=State.QUEUED).order_by("index"):
        if _take(shard, me, state=State.QUEUED):
            shard.refresh_from_db()
            return shard
    now = timezone.now()
    for shard in RunShard.objects.filter(run=run, state=State.LEASED).exclude(lease_owner=me).order_by("index"):
        # Conditional on the owner and expiry we judged lapsed, so two executors can't both take it over.
        if lapsed(shard, now=now) and _take(shard, me, state=State.LEASED, lease_owner=shard.lease_owner,
                                            lease_expires=shard.lease_expires):
            shard.refresh_from_db()
            return shard
    return None


def has_work(run: TestRun) -> bool:
    """Something for a newly arriving executor: shards not made yet, a queued shard, or a lapsed lease."""
    if not RunShard.objects.filter(run=run).exists():
        return True
    now = timezone.now()
    return any(s.state == State.QUEUED or lapsed(s, now=now)
               for s in RunShard.objects.filter(run=run).exclude(state=State.DONE))


def renew(shard: RunShard, me: str) -> bool:
    """Extend `me`'s lease; False when `me` no longer holds it (it lapsed and another executor took it)."""
    return bool(RunShard.objects.filter(pk=shard.pk, state=State.LEASED, lease_owner=me).update(
        lease_expires=timezone.now() + lease_duration()))


def finish(shard: RunShard, me: str) -> bool:
    return bool(RunShard.objects.filter(pk=shard.pk, state=State.LEASED, lease_owner=me).update(
        state=State.DONE, done_by=me, lease_owner="", lease_expires=None))


def all_done(run: TestRun) -> bool:
    return not RunShard.objects.filter(run=run).exclude(state=State.DONE).exists()


def queued_count(run: TestRun) -> int:
    return RunShard.objects.filter(run=run, state=State.QUEUED).count()


def live_lease(run: TestRun) -> bool:
    """Some executor holds a lease on the run that has not lapsed: the run is being worked on."""
    now = timezone.now()
    return any(not lapsed(s, now=now) for s in RunShard.objects.filter(run=run, state=State.LEASED))


def requeue_lapsed(run: TestRun) -> list[int]:
    """Lapsed shards back to `queued` (the stale sweep); returns their indexes."""
    now = timezone.now()
    requeued = []
    for shard in RunShard.objects.filter(run=run, state=State.LEASED):
        if lapsed(shard, now=now) and RunShard.objects.filter(
                pk=shard.pk, state=State.LEASED, lease_owner=shard.lease_owner,
                lease_expires=shard.lease_expires).update(state=State.QUEUED, lease_owner="", lease_expires=None):
            requeued.append(shard.index)
    return requeued
