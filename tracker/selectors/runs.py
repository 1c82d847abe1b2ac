"""Read paths for runs: progress, latest verdict per config, verification per task and lane, regressions."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import BooleanField, Count, ExpressionWrapper, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from ..models import ConfigResult, FailingConfig, Task, TestRun, WorkerHeartbeat

PASS = "pass"
# Statuses that say nothing about Paddle: the engine can't run the config (or not on this machine).
GAP_STATUSES = ("unsupported", "skipped_too_large")
HEARTBEAT_FRESH = timedelta(minutes=3)


# ----------------------------------------------------------------------------- progress


def status_counts(run: TestRun) -> dict[str, int]:
    rows = ConfigResult.objects.filter(run=run).values("status").annotate(n=Count("id")).order_by("status")
    return {row["status"]: row["n"] for row in rows}


def recent_rate(run: TestRun, window_seconds: int = 60) -> float | None:
    """Configs per second over the last minute of results (None before two results)."""
    since = timezone.now() - timedelta(seconds=window_seconds)
    times = list(ConfigResult.objects.filter(run=run, created__gte=since).order_by("created")
                 .values_list("created", flat=True))
    if len(times) < 2:
        return None
    span = (timezone.now() - times[0]).total_seconds()
    return len(times) / span if span > 0 else None


def lane_workers(lane: str) -> list[WorkerHeartbeat]:
    """Workers that advertised this lane recently."""
    fresh = timezone.now() - HEARTBEAT_FRESH
    return [w for w in WorkerHeartbeat.objects.filter(last_seen__gte=fresh) if lane in (w.lanes or [])]


def waiting_reason(run: TestRun) -> str:
    if run.state != TestRun.State.QUEUED:
        return ""
    if run.lane == TestRun.Lane.GPU and not lane_workers("gpu"):
        return _("waiting for a GPU worker")
    if not lane_workers(run.lane):
        return _("waiting for a worker (start: python manage.py qcluster)")
    return _("queued")


def run_summary(run: TestRun) -> dict:
    """The JSON of GET /api/runs/<id>."""
    rate = recent_rate(run) if run.state == TestRun.State.RUNNING else None
    remaining = max(0, run.total - run.done)
    return {
        "id": run.pk,
        "state": run.state,
        "lane": run.lane,
        "scope": run.scope,
        "paddle_version": run.paddle_version,
        "paddle_commit": run.paddle_commit,
        "torch_version": run.torch_version,
        "host": run.host,
        "total": run.total,
        "done": run.done,
        "counts": status_counts(run),
        "rate": rate,
        "eta_seconds": remaining / rate if rate else None,
        "waiting": waiting_reason(run),
        "message": run.message,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }


# ----------------------------------------------------------------------------- verdicts per config


def latest_results(*, lane: str, task: Task | None = None, config_ids=None) -> dict[int, ConfigResult]:
    """failing_config_id -> its newest ConfigResult in the lane."""
    qs = ConfigResult.objects.filter(run__lane=lane).select_related("run", "task", "failing_config")
    if task is not None:
        qs = qs.filter(task=task)
    if config_ids is not None:
        qs = qs.filter(failing_config_id__in=list(config_ids))
    latest: dict[int, ConfigResult] = {}
    for result in qs.order_by("failing_config_id", "-run_id"):
        latest.setdefault(result.failing_config_id, result)
    return latest


@dataclass
class Verification:
    kind: str  # verified | failing | engine_gap | partial | untested
    text: str
    failing: int = 0
    total: int = 0
    gaps: int = 0
    paddle_version: str = ""


def task_verification(task: Task, lane: str | None = None) -> Verification:
    """What the newest verdicts say about a task's fix on the lane (the task's own kernel by default)."""
    lane = lane or task.kernel.lower()
    config_ids = list(FailingConfig.objects.filter(task=task).values_list("id", flat=True))
    total = len(config_ids)
    latest = latest_results(lane=lane, task=task)
    if not latest:
        return Verification("untested", _("not re-tested yet"), total=total)
    statuses = [r.status for r in latest.values()]
    failing = sum(1 for s in statuses if s != PASS and s not in GAP_STATUSES)
    gaps = sum(1 for s in statuses if s in GAP_STATUSES)
    untested = total - len(latest)
    newest = max(latest.values(), key=lambda r: r.run_id).run
    version = newest.paddle_version
    if failing:
        text = _("still failing %(a)d of %(b)d") % {"a": failing, "b": total}
        return Verification("failing", text, failing, total, gaps, version)
    if untested:
        text = _("%(n)d of %(b)d configs not re-tested yet") % {"n": untested, "b": total}
        return Verification("partial", text, 0, total, gaps, version)
    if gaps == total:
        text = _("engine gap: the engine can't run any of the %(b)d configs here (not a Paddle bug)") % {"b": total}
        return Verification("engine_gap", text, 0, total, gaps, version)
    if gaps:
        text = _("engine gap: %(n)d of %(b)d configs can't be run by the engine here; the rest pass") % {
            "n": gaps, "b": total}
        return Verification("engine_gap", text, 0, total, gaps, version)
    return Verification("verified", _("fix verified on Paddle %(v)s") % {"v": version}, 0, total, 0, version)


def task_latest_verdicts(task: Task, lane: str | None = None, limit: int = 200) -> dict:
    """The newest verdict of each re-tested config of a task in a lane, failing ones first.

    Only re-tested configs are listed (a task can have 15 000 configs, nearly all untested), at most
    `limit` of them; the counts say what is left out. Diff maps are not loaded, only whether one exists.
    """
    lane = lane or task.kernel.lower()
    qs = (ConfigResult.objects.filter(run__lane=lane, task=task).select_related("run", "failing_config")
          .defer("diff_map")
          .annotate(has_diff_map=ExpressionWrapper(Q(diff_map__isnull=False), output_field=BooleanField())))
    latest: dict[int, ConfigResult] = {}
    for result in qs.order_by("failing_config_id", "-run_id"):
        latest.setdefault(result.failing_config_id, result)

    def rank(result: ConfigResult):
        group = 2 if result.status == PASS else (1 if result.status in GAP_STATUSES else 0)
        return group, -(result.max_rel or 0), result.failing_config_id

    rows = sorted(latest.values(), key=rank)
    total = FailingConfig.objects.filter(task=task).count()
    return {"rows": rows[:limit], "tested": len(rows), "hidden": max(0, len(rows) - limit),
            "untested": max(0, total - len(rows)), "total": total}


# ----------------------------------------------------------------------------- regressions


@dataclass
class Regression:
    task: Task
    failing_config_id: int
    config: str
    status: str
    passed_run_id: int
    passed_version: str
    failed_run_id: int
    failed_version: str
    max_abs: float | None = None


def regressions(*, lane: str | None = None, task: Task | None = None, run: TestRun | None = None) -> list[Regression]:
    """Configs whose newest verdict in a lane fails although an earlier run of that lane passed them.

    With `run`, only the configs that run failed (the regressions that run found).
    """
    lanes = [lane] if lane else [c.value for c in TestRun.Lane]
    found: list[Regression] = []
    for lane_name in lanes:
        passed = ConfigResult.objects.filter(run__lane=lane_name, status=PASS)
        if task is not None:
            passed = passed.filter(task=task)
        last_pass: dict[int, tuple[int, str]] = {}
        for cfg_id, run_id, version in passed.order_by("run_id").values_list(
                "failing_config_id", "run_id", "run__paddle_version"):
            last_pass[cfg_id] = (run_id, version)
        if not last_pass:
            continue
        latest = latest_results(lane=lane_name, config_ids=last_pass.keys())
        for cfg_id, result in latest.items():
            if result.status == PASS or result.status in GAP_STATUSES:
                continue
            pass_run, pass_version = last_pass[cfg_id]
            if pass_run >= result.run_id:
                continue
            if run is not None and result.run_id != run.pk:
                continue
            found.append(Regression(
                task=result.task, failing_config_id=cfg_id, config=result.failing_config.config,
                status=result.status, passed_run_id=pass_run, passed_version=pass_version,
                failed_run_id=result.run_id, failed_version=result.run.paddle_version, max_abs=result.max_abs))
    found.sort(key=lambda r: (-r.failed_run_id, r.task.number, r.failing_config_id))
    return found


def run_list(limit: int = 200):
    return TestRun.objects.all()[:limit]


def run_results(run: TestRun, status: str | None = None, limit: int = 500):
    qs = ConfigResult.objects.filter(run=run).select_related("task", "failing_config").order_by("task__number", "id")
    if status:
        qs = qs.filter(status=status)
    return qs[:limit]
