"""Read paths for runs: progress, latest verdict per config, verification per task and lane, regressions."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.db.models import (BooleanField, Case, Count, Exists, ExpressionWrapper, F, FloatField, IntegerField, Max,
                              OuterRef, Q, Subquery, Sum, When)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone
from django.utils.translation import gettext as _

from apitester import known as known_failures
from apitester.known import describe as describe_stale
from apitester.pool import TimeBudget, config_elements, default_memory_budget, estimate_bytes

from ..estimate import Done, Estimate, Left, Profile, per_config_overhead, remaining_seconds
from ..models import ConfigResult, FailingConfig, LatestResult, RunShard, Task, TestRun, WorkerHeartbeat
from . import provenance
from .envs import env_key, main_version
from .flakiness import config_flakiness, flaky_listing
from ..vocab import (
    ACTIVE_RUN_STATES,
    AdaptationKind,
    BY_DESIGN,
    CACHE_EVENTS,
    DIFFERS_FROM_TORCH,
    FAILING,
    NO_VERDICT,
    PASSING,
    PHASE_NAMES,
    TORCH_SUSPECT,
    Lane,
    Status,
    VerificationKind,
    lane_of,
)

# Statuses that say nothing about Paddle: the engine (or the Torch reference) can't run the config,
# or not on this machine.
GAP_STATUSES = tuple(sorted(NO_VERDICT))
HEARTBEAT_FRESH = timedelta(minutes=3)


# ----------------------------------------------------------------------------- progress


def run_configs(run: TestRun):
    """The configs a run judges: every FailingConfig of the tasks in its scope (one definition, the
    executor's and the progress's); a bisection probe lane judges only the configs its scope lists."""
    found = FailingConfig.objects.filter(task__number__in=run.scope.get("tasks", []))
    if isinstance(run.scope.get("configs"), list):
        found = found.filter(id__in=run.scope["configs"])
    return found.order_by("id")


@dataclass(frozen=True)
class TaskProgress:
    """One task's share of a run in progress: how many of its configs have a verdict, and which."""

    number: int
    total: int
    done: int = 0
    passing: int = 0
    failing: int = 0
    other: int = 0  # no verdict, by design, torch suspect: judged, but neither a pass nor a Paddle failure

    def as_dict(self) -> dict:
        return {"total": self.total, "done": self.done, "pass": self.passing, "fail": self.failing,
                "other": self.other}


def task_progress(run: TestRun) -> dict[int, TaskProgress]:
    """Per task number: its configs in the run (for a matrix run, in all its release lanes together) and
    their verdicts so far, counted by the board's verdict classes."""
    runs = list(run.lanes.all()) if run.pk else []
    lanes = len(runs) or 1
    run_ids = [r.pk for r in runs] or [run.pk]
    # scope_tasks, not run_configs: a page must render even for a scope edited into nonsense in the admin
    totals = dict(FailingConfig.objects.filter(task__number__in=run.scope_tasks).order_by()
                  .values_list("task__number").annotate(n=Count("pk")))
    found: dict[int, dict[str, int]] = {}
    for number, status, n in (ConfigResult.objects.filter(run_id__in=run_ids).order_by()
                              .values_list("task__number", "status").annotate(n=Count("pk"))):
        counts = found.setdefault(number, {"done": 0, "passing": 0, "failing": 0, "other": 0})
        counts["done"] += n
        counts["passing" if status in PASSING else "failing" if status in FAILING else "other"] += n
    probes = [r.scope["configs"] for r in runs if isinstance(r.scope.get("configs"), list)]
    lanes -= len(probes)
    totals = {number: total * lanes for number, total in totals.items()}
    for ids in probes:  # a bisection probe lane holds only some configs of each task
        for number, n in (FailingConfig.objects.filter(id__in=ids).order_by().values_list("task__number")
                          .annotate(n=Count("pk"))):
            totals[number] = totals.get(number, 0) + n
    return {number: TaskProgress(number=number, total=total, **found.get(number, {}))
            for number, total in sorted(totals.items())}


def active_run() -> TestRun | None:
    """The run a visitor watches on the board: the newest running top-level run, else the newest queued."""
    return (TestRun.objects.filter(state__in=[TestRun.State.RUNNING, TestRun.State.QUEUED], parent__isnull=True)
            .order_by(Case(When(state=TestRun.State.RUNNING, then=0), default=1), "-pk").first())


def status_counts(run: TestRun) -> dict[str, int]:
    rows = ConfigResult.objects.filter(run=run).values("status").annotate(n=Count("id")).order_by("status")
    return {row["status"]: row["n"] for row in rows}


def layer_counts(run: TestRun) -> dict[str, dict[str, int]]:
    """Per-status counts of the strict layer and of the adapted layer (configs whose spec adapts;
    the others' adapted layer is their strict one)."""
    strict: dict[str, int] = {}
    adapted: dict[str, int] = {}
    for status, strict_status, adapted_status in ConfigResult.objects.filter(run=run).values_list(
            "status", "strict_status", "adapted_status"):
        s = strict_status or status
        strict[s] = strict.get(s, 0) + 1
        a = adapted_status or s
        adapted[a] = adapted.get(a, 0) + 1
    return {"strict": dict(sorted(strict.items())), "adapted": dict(sorted(adapted.items()))}


def recent_rate(run: TestRun, window_seconds: int = 60) -> float | None:
    """Configs per second over the last minute of results (None before two results)."""
    since = timezone.now() - timedelta(seconds=window_seconds)
    times = list(ConfigResult.objects.filter(run=run, created__gte=since).order_by("created")
                 .values_list("created", flat=True))
    if len(times) < 2:
        return None
    span = (timezone.now() - times[0]).total_seconds()
    return len(times) / span if span > 0 else None


@lru_cache(maxsize=1 << 16)
def _config_size(config: str) -> tuple[int, int]:
    """(input elements, peak bytes the pool estimates) of a config text: parsed once per process."""
    return config_elements(config), estimate_bytes(config)


@lru_cache(maxsize=1)
def _cost_profile() -> Profile:
    """What configs of each API cost by size on a recorded whole-set run (tracker/data/config_costs.json)."""
    return Profile.load()


def remaining_estimate(run: TestRun) -> Estimate | None:
    """What the run still needs, from the sizes and APIs of what is left, costed by the recorded profile as this run's
    results so far calibrate it (tracker/estimate.py); None before its first result, or when it is not running."""
    if run.state != TestRun.State.RUNNING:
        return None
    done_ids, done, spans = set(), [], []
    for config_id, text, number, api, seconds, created in (ConfigResult.objects.filter(run=run)
                                                           .values_list("failing_config_id", "failing_config__config",
                                                                        "failing_config__task__number",
                                                                        "failing_config__task__api", "seconds",
                                                                        "created")):
        done_ids.add(config_id)
        done.append(Done(number, _config_size(text)[0], seconds or 0.0, api))
        spans.append((created, seconds or 0.0, done[-1]))
    if not done:
        return None
    workers = max(1, settings.RUNNER_WORKERS) * max(1, len(set(
        run.shards.filter(state=RunShard.State.LEASED).values_list("lease_owner", flat=True))))
    budget = TimeBudget(settings.RUNNER_TIME_BASE, settings.RUNNER_TIME_PER_MELEMENT, settings.RUNNER_TIME_MAX)
    memory = (settings.RUNNER_MEMORY_BUDGET_MB << 20) or default_memory_budget(settings.RUNNER_WORKERS)
    left = []
    # scope_tasks, not run_configs: the page must render for a scope edited into nonsense in the admin too
    configs = FailingConfig.objects.filter(task__number__in=run.scope_tasks)
    listed = run.scope.get("configs") if isinstance(run.scope, dict) else None
    if isinstance(listed, list):
        configs = configs.filter(id__in=[i for i in listed if isinstance(i, int) and not isinstance(i, bool)
                                         and 0 < i < 2**63])
    for config_id, text, number, api in configs.values_list("id", "config", "task__number", "task__api"):
        if config_id not in done_ids:
            elements, nbytes = _config_size(text)
            left.append(Left(number, elements, api, cap=budget.for_elements(elements), skipped=nbytes > memory))
    return remaining_seconds(done, left, workers, _cost_profile(), overhead=_recent_overhead(spans, workers))


OVERHEAD_WINDOW = 500  # the latest results the per-config overhead is measured over


def _recent_overhead(spans: list, workers: int) -> float:
    """The seconds each of the latest results took beyond its own (estimate.per_config_overhead), from the wall time
    between the first of them starting and the last one ending."""
    recent = sorted(spans, key=lambda s: s[0])[-OVERHEAD_WINDOW:]
    began = min(created - timedelta(seconds=seconds) for created, seconds, _ in recent)
    elapsed = (recent[-1][0] - began).total_seconds()
    return per_config_overhead([d for *_, d in recent], workers, elapsed)


def advertised_releases() -> list[str]:
    """Paddle releases that fresh worker heartbeats say they can run."""
    fresh = timezone.now() - HEARTBEAT_FRESH
    found = set()
    for releases in WorkerHeartbeat.objects.filter(last_seen__gte=fresh).values_list("releases", flat=True):
        found.update(releases or [])
    return sorted(found)


def release_workers(lane: str, release: str) -> list[WorkerHeartbeat]:
    return [w for w in lane_workers(lane) if release in (w.releases or [])]


def lane_workers(lane: str) -> list[WorkerHeartbeat]:
    """Workers that advertised this lane recently."""
    fresh = timezone.now() - HEARTBEAT_FRESH
    return [w for w in WorkerHeartbeat.objects.filter(last_seen__gte=fresh) if lane in (w.lanes or [])]


def waiting_reason(run: TestRun) -> str:
    if run.state != TestRun.State.QUEUED:
        return ""
    if run.lane == Lane.GPU and not lane_workers(Lane.GPU):
        return _("waiting for a GPU worker")
    if run.torch and not release_workers(run.lane, env_key(run.release, run.torch)):
        return _("waiting for a worker with Paddle %(v)s and Torch %(t)s") % {"v": run.release, "t": run.torch}
    if run.release and run.release != "matrix" and not run.torch and not release_workers(run.lane, run.release):
        return _("waiting for a worker with Paddle %(v)s") % {"v": run.release}
    if not lane_workers(run.lane):
        return _("waiting for a worker (start: python manage.py qcluster)")
    return _("queued")


def _times_and_tasks(run: TestRun) -> dict:
    return {"started_at": run.started_at.isoformat() if run.started_at else None,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None, **_tasks_field(run)}


def _provenance_fields(run: TestRun) -> dict:
    """The threads both frameworks are pinned to (None: a run from before #46) and the distinct provenances of its
    verdicts (builds, threads, CPU capability, host — shown to staff only: selectors.visibility)."""
    return {"threads": run.threads, "torch": run.torch, "provenance": provenance.run_provenance(run)}


def run_summary(run: TestRun) -> dict:
    """The JSON of GET /api/runs/<id> (a matrix run: its totals plus one summary per release lane)."""
    lanes = list(run.lanes.order_by("id")) if run.pk else []
    if lanes:
        summaries = [run_summary(child) for child in lanes]
        counts: dict[str, int] = {}
        for item in summaries:
            for status, n in item["counts"].items():
                counts[status] = counts.get(status, 0) + n
        layers: dict[str, dict[str, int]] = {}
        for item in summaries:
            for layer, by_status in (item.get("layers") or {}).items():
                merged = layers.setdefault(layer, {})
                for status, n in by_status.items():
                    merged[status] = merged.get(status, 0) + n
        rates = [item["rate"] for item in summaries if item["rate"]]
        total, done = sum(i["total"] for i in summaries), sum(i["done"] for i in summaries)
        rate = sum(rates) if rates else None
        return {
            "id": run.pk, "state": run.state, "active": run.is_active, "lane": run.lane, "scope": run.scope,
            "release": "matrix", "paddle_flags": run.paddle_flags or {},
            "releases": [child.release for child in lanes], "paddle_version": "", "paddle_commit": "",
            "torch_version": "", "host": "", "total": total, "done": done, "counts": counts, "layers": layers,
            # the lanes run one after another on a host's queue: their times left add up
            "rate": rate, **_matrix_eta(summaries),
            "waiting": "; ".join(f"{i['release']}: {i['waiting']}" for i in summaries if i["waiting"]),
            "message": run.message, "lanes": summaries, **_provenance_fields(run), **_times_and_tasks(run),
        }
    rate = recent_rate(run) if run.state == TestRun.State.RUNNING else None
    estimate = remaining_estimate(run)
    return {
        "id": run.pk,
        "state": run.state,
        "active": run.is_active,  # queued or running: the pages keep polling while it is
        "lane": run.lane,
        "scope": run.scope,
        "release": run.release,
        "parent": run.parent_id,
        "paddle_flags": run.paddle_flags or {},  # the Paddle flags every verdict of the run was given with
        **_provenance_fields(run),
        "paddle_version": run.paddle_version,
        "paddle_commit": run.paddle_commit,
        "torch_version": run.torch_version,
        "host": run.host,
        "total": run.total,
        "done": run.done,
        "counts": status_counts(run),
        "layers": layer_counts(run),
        "rate": rate,
        # From the sizes of the configs left and this run's seconds per size (tracker/estimate.py), with a range.
        "eta_seconds": estimate.expected if estimate else None,
        "eta_range": [estimate.low, estimate.high] if estimate else None,
        "waiting": waiting_reason(run),
        "message": run.message,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        **_tasks_field(run),
    }


def run_profile(run: TestRun) -> dict:
    """Where a run's worker time went: seconds per engine phase summed over its verdicts (apitester.engine.phases; a matrix
    run: over its lanes'), the Torch result cache's events, and whether the run read the readings. Summed by the
    database (one aggregate over the JSON keys, no row decoded here: a CPU-evidence run holds 15,000 verdicts).
    Verdicts stored before phases were recorded count in ``configs`` only."""
    if not run.pk:
        return {"configs": 0, "profiled": 0, "seconds": {}, "torch_cache": {}, "readings": run.readings}
    results = ConfigResult.objects.filter(Q(run=run) | Q(run__parent=run))
    sums = {f"s{i}": Sum(Cast(KT(f"phases__{name}"), FloatField())) for i, name in enumerate(PHASE_NAMES)}
    sums |= {f"c{i}": Sum(Cast(KT(f"torch_cache__{name}"), IntegerField())) for i, name in enumerate(CACHE_EVENTS)}
    row = results.aggregate(configs=Count("id"), profiled=Count("id", filter=~Q(phases={})), **sums)
    seconds = {name: round(row[f"s{i}"], 2) for i, name in enumerate(PHASE_NAMES) if row[f"s{i}"]}
    cache = {name: row[f"c{i}"] for i, name in enumerate(CACHE_EVENTS) if row[f"c{i}"]}
    return {"configs": row["configs"], "profiled": row["profiled"],
            "seconds": dict(sorted(seconds.items(), key=lambda item: -item[1])), "torch_cache": cache,
            "readings": run.readings}


def _matrix_eta(summaries: list[dict]) -> dict:
    """A matrix run's time left: its running lanes' estimates summed (a lane not started yet has none: unknown)."""
    running = [item for item in summaries if item["state"] == TestRun.State.RUNNING]
    if not running or any(item["eta_seconds"] is None for item in running):
        return {"eta_seconds": None, "eta_range": None}
    return {"eta_seconds": sum(item["eta_seconds"] for item in running),
            "eta_range": [sum(item["eta_range"][0] for item in running), sum(item["eta_range"][1] for item in running)]}


def run_task_numbers(run_id: int) -> list[int]:
    """The numbers of the tasks a run has results for."""
    return sorted(Task.objects.filter(config_results__run_id=run_id).values_list("number", flat=True).distinct())


def _tasks_field(run: TestRun) -> dict:
    # Per-task progress for the board and task pages' live counters; a lane of a matrix run leaves it to
    # its parent's summary.
    if run.parent_id:
        return {}
    return {"tasks": {str(number): p.as_dict() for number, p in task_progress(run).items()}}


# ----------------------------------------------------------------------------- verdicts per config


def main_release_q(prefix: str = "run__") -> Q:
    """Runs on the main environment's Paddle ("" or its version). The board's verification and regression
    readings use only these: a matrix run on an older release is a look back, not the newest verdict; a run judged
    against another Torch than the project's (``TestRun.torch``) measures the reference's drift, not Paddle."""
    return main_release_only_q(prefix) & Q(**{f"{prefix}torch": ""})


def main_release_only_q(prefix: str) -> Q:
    """The main environment's release, whatever Torch: for LatestResult, which holds no run against another Torch
    (services.latest.record)."""
    return Q(**{f"{prefix}release": ""}) | Q(**{f"{prefix}release": main_version()})


# A verdict's JSON columns that only a listed row shows (decoding them for each of a large task's newest verdicts
# was most of its page's time).
ROW_JSON = ("phases", "torch_cache", "worst_index", "known_failure", "comparison")


def newest_main(*, lane: str | None = None, task: Task | None = None, config_ids=None) -> dict[tuple[int, str], tuple]:
    """(config id, lane) -> (run id, result id, the result's task id) of its newest verdict on the main environment
    (main_release_q), read off LatestResult (a row per release and Paddle version: a few per config) — never off
    the results themselves (a year of weekly runs holds ~400 per config)."""
    rows = LatestResult.objects.filter(main_release_only_q(""))
    if lane is not None:
        rows = rows.filter(lane=lane)
    if task is not None:
        rows = rows.filter(failing_config__task=task)  # the config's task now (staff may have moved it)
    if config_ids is not None:
        rows = rows.filter(failing_config_id__in=list(config_ids))
    newest: dict[tuple[int, str], tuple] = {}
    for config_id, row_lane, run_id, result_id, task_id in rows.values_list(
            "failing_config_id", "lane", "run_id", "result_id", "task_id"):
        if (found := newest.get((config_id, row_lane))) is None or run_id > found[0]:
            newest[(config_id, row_lane)] = (run_id, result_id, task_id)
    return newest


def latest_results(*, lane: str, task: Task | None = None, config_ids=None) -> dict[int, ConfigResult]:
    """failing_config_id -> its newest ConfigResult in the lane (main environment).

    Only the newest result of each config is read, whatever the history: the LatestResult rows name it
    (newest_main); the page's selectors get this dict passed down (`task_latest`) instead of reading it again.
    """
    ids = [result_id for _run, result_id, _task in newest_main(lane=lane, task=task, config_ids=config_ids).values()]
    if not ids:
        return {}
    # JSON no reader of every row needs is deferred (the rows a page lists are read again whole:
    # task_latest_verdicts), and the few runs and tasks are read once, not joined into each of 15,000 rows; nor are
    # their configs (a config object per verdict was a third of a GPU task page's time): a reader of a few configs'
    # texts reads those (cpu_evidence), one result's config loads on access.
    qs = (ConfigResult.objects.filter(pk__in=ids)
          .defer("diff_map", *ROW_JSON)
          .annotate(has_diff_map=ExpressionWrapper(Q(diff_map__isnull=False), output_field=BooleanField())))
    results = list(qs.order_by("failing_config_id"))
    runs = TestRun.objects.defer("scope").in_bulk({r.run_id for r in results})
    tasks = {task.pk: task} if task is not None else {}
    # A result keeps the task it was judged under; staff may have moved its config to another task since.
    tasks |= Task.objects.in_bulk({r.task_id for r in results} - tasks.keys())
    for result in results:
        result.run, result.task = runs[result.run_id], tasks[result.task_id]
    return {result.failing_config_id: result for result in results}


def _whole(results: list[ConfigResult]) -> list[ConfigResult]:
    """The same results with every column but the diff map (one query), in the same order."""
    whole = (ConfigResult.objects.select_related("run", "failing_config").defer("diff_map", "run__scope")
             .annotate(has_diff_map=ExpressionWrapper(Q(diff_map__isnull=False), output_field=BooleanField()))
             .in_bulk([r.pk for r in results]))
    return [whole[r.pk] for r in results]


@dataclass
class TaskLatest:
    """A task's newest verdict per config, read once per request and passed to every panel that needs it."""
    own: dict[int, ConfigResult]  # in the task's own lane (its verdicts)
    cpu: dict[int, ConfigResult]  # in the cpu lane (a GPU task's CPU evidence and diagnoses; `own` for a CPU task)


def task_latest(task: Task) -> TaskLatest:
    own = latest_results(lane=task.lane, task=task)
    return TaskLatest(own=own, cpu=own if task.lane == Lane.CPU else latest_results(lane=Lane.CPU, task=task))


@dataclass
class Verification:
    kind: VerificationKind
    text: str
    failing: int = 0
    total: int = 0
    gaps: int = 0
    paddle_version: str = ""
    by_design: int = 0      # documented differences (strict fails, Paddle's documented behaviour agrees)
    torch_suspect: int = 0  # strict fails, and the engine's evidence points at Torch
    reasons: tuple = ()     # the documented differences' reasons
    flaky: int = 0          # configs whose results on this build disagree between runs (selectors.flakiness)

    @property
    def differs_from_torch(self) -> bool:
        """No Paddle failure, but configs differ from Torch (by design, or the engine suspects Torch)."""
        return self.kind in DIFFERS_FROM_TORCH


def _by_design_reasons(adaptations) -> list[str]:
    return [a.get("reason", "") for a in adaptations or [] if a.get("kind") == AdaptationKind.DOCUMENTED_SEMANTICS]


def _verification(total: int, latest: list[tuple], flaky: int = 0) -> Verification:
    """The verdict on a task from the newest (status, run id, paddle version, adaptations) of each
    re-tested config.  "Fix verified" needs every config's strict layer to pass (status ``pass``) and no config
    flaky (``flaky``: the configs whose results on their newest build disagree, selectors.flakiness)."""
    if not latest:
        return Verification(VerificationKind.UNTESTED, _("not re-tested yet"), total=total)
    failing = sum(1 for status, *_rest in latest if status in FAILING)
    gaps = sum(1 for status, *_rest in latest if status in NO_VERDICT)
    by_design = sum(1 for status, *_rest in latest if status in BY_DESIGN)
    suspect = sum(1 for status, *_rest in latest if status in TORCH_SUSPECT)
    reasons = tuple(dict.fromkeys(reason for status, _run, _version, *extra in latest if status in BY_DESIGN
                                  for reason in _by_design_reasons(extra[0] if extra else [])))
    untested = total - len(latest)
    version = max(latest, key=lambda item: item[1])[2]
    extra = {"by_design": by_design, "torch_suspect": suspect, "reasons": reasons}
    if failing:
        text = _("still failing %(a)d of %(b)d") % {"a": failing, "b": total}
        return Verification(VerificationKind.FAILING, text, failing, total, gaps, version, **extra)
    if untested:
        text = _("%(n)d of %(b)d configs not re-tested yet") % {"n": untested, "b": total}
        return Verification(VerificationKind.PARTLY_TESTED, text, 0, total, gaps, version, **extra)
    if by_design == total:
        text = _("differs from Torch by design: %(reason)s") % {"reason": "; ".join(reasons)}
        return Verification(VerificationKind.BY_DESIGN, text, 0, total, gaps, version, **extra)
    if by_design or suspect:
        parts = []
        if by_design:
            parts.append(_("%(n)d of %(b)d configs differ from Torch by design") % {"n": by_design, "b": total})
        if suspect:
            parts.append(_("%(n)d of %(b)d configs: the engine suspects the Torch reference") % {
                "n": suspect, "b": total})
        return Verification(VerificationKind.DIFFERS, "; ".join(parts), 0, total, gaps, version, **extra)
    if gaps == total:
        text = _("engine gap: the engine can't run any of the %(b)d configs here (not a Paddle bug)") % {"b": total}
        return Verification(VerificationKind.ENGINE_GAP, text, 0, total, gaps, version)
    if gaps:
        text = _("engine gap: %(n)d of %(b)d configs can't be run by the engine here; the rest pass") % {
            "n": gaps, "b": total}
        return Verification(VerificationKind.ENGINE_GAP, text, 0, total, gaps, version)
    # here every config is `pass`: its strict layer passed
    if flaky:
        text = _("fix not verified: %(n)d of %(b)d configs are flaky (their results disagree between runs)") % {
            "n": flaky, "b": total}
        return Verification(VerificationKind.FLAKY, text, 0, total, 0, version, flaky=flaky)
    return Verification(VerificationKind.VERIFIED, _("fix verified on Paddle %(v)s") % {"v": version}, 0, total, 0, version)


def task_verification(task: Task, lane: str | None = None, latest: dict | None = None) -> Verification:
    """What the newest verdicts say about a task's fix on the lane (the task's own kernel by default);
    `latest`: that lane's latest_results when the caller read them already."""
    lane = lane or task.lane
    total = FailingConfig.objects.filter(task=task).count()
    newest = latest if latest is not None else latest_results(lane=lane, task=task)
    rows = [(r.status, r.run_id, r.run.paddle_version, r.adaptations) for r in newest.values()]
    # Read for every task (not only where a fix would read verified): one page costs the same queries
    # whatever its verdicts say (tests/hardening/test_public_reads.py).
    scores = config_flakiness(task_ids=[task.id], main_release_only=True)
    flaky = sum(1 for config_id, r in newest.items()
                if (found := scores.get((config_id, lane, r.run.paddle_version, r.run.paddle_commit)))
                and found.flaky)
    return _verification(total, rows, flaky)


def _all_pass(latest: list[tuple]) -> bool:
    return bool(latest) and all(status == Status.PASS for status, *_rest in latest)


def verifications_in_own_lane() -> dict[int, Verification]:
    """task id -> its Verification in its own kernel's lane, for every re-tested task at once.

    Same rule as task_verification, in a few queries whatever the board size: the newest verdict of each config
    per lane comes off the LatestResult rows (newest_main), then only those results are read.
    """
    newest = newest_main()
    if not newest:
        return {}
    kernel_lane = {task_id: lane_of(kernel) for task_id, kernel in Task.objects.values_list("id", "kernel")}
    mine = {result_id: (config_id, lane) for (config_id, lane), (_run, result_id, task_id) in newest.items()
            if lane == kernel_lane.get(task_id)}  # each task's own lane only
    runs = {run_id: (version, commit) for run_id, version, commit in TestRun.objects.filter(
        id__in={run_id for run_id, _result, _task in newest.values()}).values_list("id", "paddle_version", "paddle_commit")}
    latest: dict[int, list[tuple]] = {}
    builds: dict[int, list[tuple]] = {}  # task id -> (config, lane, version, commit) of each newest verdict
    rows = ConfigResult.objects.filter(pk__in=list(mine)).values_list("id", "task_id", "run_id", "status", "adaptations")
    for result_id, task_id, run_id, status, adaptations in rows:
        config_id, lane = mine[result_id]
        version, commit = runs.get(run_id, ("", ""))
        latest.setdefault(task_id, []).append((status, run_id, version, adaptations))
        builds.setdefault(task_id, []).append((config_id, lane, version, commit))
    # flakiness only matters where a fix would read verified: read it for those tasks only
    passing = [task_id for task_id, items in latest.items() if _all_pass(items)]
    scores = config_flakiness(task_ids=passing, main_release_only=True) if passing else {}
    flaky = Counter({task_id: sum(1 for key in builds[task_id] if (found := scores.get(key)) and found.flaky)
                     for task_id in passing})
    totals = dict(
        FailingConfig.objects.filter(task_id__in=latest).values("task_id").annotate(n=Count("id")).values_list("task_id", "n")
    )
    return {task_id: _verification(totals.get(task_id, 0), items, flaky[task_id]) for task_id, items in latest.items()}


def task_latest_verdicts(task: Task, lane: str | None = None, limit: int = 200, latest: dict | None = None) -> dict:
    """The newest verdict of each re-tested config of a task in a lane, failing ones first.

    Only re-tested configs are listed (a task can have 15 000 configs, nearly all untested), at most
    `limit` of them; the counts say what is left out. Diff maps are not loaded, only whether one exists.
    `latest`: that lane's latest_results when the caller read them already.
    """
    lane = lane or task.lane
    if latest is None:
        latest = latest_results(lane=lane, task=task)

    def rank(result: ConfigResult):
        group = 2 if result.status == Status.PASS else (1 if result.status in GAP_STATUSES else 0)
        return group, -(result.max_rel or 0), result.failing_config_id

    rows = sorted(latest.values(), key=rank)
    total = FailingConfig.objects.filter(task=task).count()
    return {"rows": _whole(rows[:limit]), "tested": len(rows), "hidden": max(0, len(rows) - limit),
            "untested": max(0, total - len(rows)), "total": total}


# ----------------------------------------------------------------------------- regressions
#
# The board's regression rule between runs of a lane (between Paddle releases it is
# tracker/selectors/releases.regressed_in, with the same steps: passes and failures only).
# tracker/selectors/charts.pass_fail_transitions() is the history beside it: every pass → fail step,
# including the ones that passed again since (docs/runner.md).

# Verdicts that judge Paddle. An engine gap (unsupported, torch_error, skipped_too_large) between two runs
# neither makes nor hides a regression.
JUDGED = PASSING | FAILING


@dataclass
class Regression:
    """A config that fails now although an earlier run of the same lane passed it."""
    task: Task
    failing_config_id: int
    config: str
    lane: str
    status: str  # its newest judged verdict in the lane (a failing one)
    passed_run_id: int  # the last run of the lane that passed it
    passed_version: str
    failed_run_id: int  # the newest run of the lane that judged it
    failed_version: str
    max_abs: float | None = None


def regressions(*, lane: str | None = None, task: Task | None = None, run: TestRun | None = None) -> list[Regression]:
    """Configs whose newest judged verdict in a lane fails although an earlier run of that lane passed them.

    With `run`, only the configs that run failed (the regressions that run found). One aggregate finds
    the configs whose newest judged run in a lane comes after their last pass; only those results are
    read (a board holds tens of thousands of results, of which a handful regress).
    """
    results = ConfigResult.objects.filter(main_release_q(), status__in=JUDGED)
    if lane:
        results = results.filter(run__lane=lane)
    if task is not None:
        results = results.filter(task=task)
    candidates = list(
        results.values("failing_config_id", "run__lane")
        .annotate(newest=Max("run_id"), last_pass=Max("run_id", filter=Q(status__in=PASSING)))
        .filter(last_pass__isnull=False, newest__gt=F("last_pass"))
        .values_list("failing_config_id", "run__lane", "newest", "last_pass")
    )
    if run is not None:
        candidates = [c for c in candidates if c[2] == run.pk]
    if not candidates:
        return []
    # (config, newest judged run) → (lane, last passing run); the newest judged verdict after a pass fails.
    passed = {(config_id, newest): (run_lane, last_pass) for config_id, run_lane, newest, last_pass in candidates}
    versions = dict(TestRun.objects.values_list("id", "paddle_version"))
    newest_results = (
        ConfigResult.objects.filter(failing_config_id__in={c[0] for c in candidates},
                                    run_id__in={c[2] for c in candidates}, status__in=FAILING)
        .select_related("task", "failing_config").defer("diff_map", "failing_config__origins")
    )
    found = []
    for result in newest_results:
        if (key := (result.failing_config_id, result.run_id)) not in passed:
            continue  # a failure of this config in a run that is another config's newest
        run_lane, passed_run_id = passed[key]
        found.append(Regression(
            task=result.task, failing_config_id=result.failing_config_id, config=result.failing_config.config,
            lane=run_lane, status=result.status, passed_run_id=passed_run_id,
            passed_version=versions.get(passed_run_id, ""), failed_run_id=result.run_id,
            failed_version=versions.get(result.run_id, ""), max_abs=result.max_abs))
    found.sort(key=lambda r: (-r.failed_run_id, r.task.number, r.failing_config_id))
    return found


def task_failed_runs(task: Task, lane: str, limit: int = 3) -> list[TestRun]:
    """The task's runs on the lane that ended `failed` since its last finished (`done`) run, newest first:
    the task page says why they stopped (e.g. re-queued too often by the stale sweep)."""
    # "has a result of the task" as one index probe per run (a join read each of the task's ~400,000 results of a year)
    last_done = (TestRun.objects.filter(lane=lane, state=TestRun.State.DONE, lanes__isnull=True)
                 .filter(Exists(ConfigResult.objects.filter(run=OuterRef("pk"), task=task)))
                 .aggregate(Max("finished_at"))["finished_at__max"])
    failed = TestRun.objects.filter(lane=lane, state=TestRun.State.FAILED, lanes__isnull=True)
    if last_done is not None:
        failed = failed.filter(finished_at__gt=last_done)
    # scope.tasks is JSON: filtered in Python so SQLite and PostgreSQL behave alike
    return [run for run in failed.order_by("-finished_at", "-id")[:200]
            if task.number in run.scope_tasks][:limit]


def run_list(limit: int = 200):
    return TestRun.objects.all()[:limit]


def run_results(run: TestRun, status: str | None = None, limit: int = 500):
    # A matrix run lists its lanes' results (each row says its release).
    qs = (ConfigResult.objects.filter(Q(run=run) | Q(run__parent=run)).select_related("task", "failing_config", "run")
          .defer("diff_map", "run__scope", "failing_config__origins")  # as latest_results: JSON the page never reads
          .order_by("task__number", "failing_config_id", "run_id"))
    if status:
        qs = qs.filter(status=status)
    return qs[:limit]


# ----------------------------------------------------------------------------- page panels


def task_runs_panel(task: Task, latest: TaskLatest | None = None) -> dict:
    """What the task page's re-test panel shows, for the task's own lane."""
    lane = task.lane
    own = latest.own if latest is not None else latest_results(lane=lane, task=task)
    return {
        "lane": lane,
        "verification": task_verification(task, lane, own),
        "latest": task_latest_verdicts(task, lane, latest=own),
        "regressions": regressions(task=task, lane=lane),  # own lane: a GPU task's CPU evidence is not its verdict
        "flaky": flaky_listing(task_ids=[task.id], lane=lane),  # the highest scores, and a count of the rest
        # scope.tasks is JSON: filtered in Python so SQLite and PostgreSQL behave alike
        "active_runs": [{"run": r, "waiting": waiting_reason(r), "progress": task_progress(r).get(task.number)}
                        for r in TestRun.objects.filter(state__in=ACTIVE_RUN_STATES)
                        if task.number in r.scope_tasks],
        "failed_runs": task_failed_runs(task, lane),
        "no_lane_worker": lane == Lane.GPU and not lane_workers(Lane.GPU),
    }


def board_run_actions() -> dict:
    """The board's run panel: whether a GPU run would wait, and the runs in progress for everyone to watch
    (e.g. the first start's re-test of every CPU task)."""
    return {
        "gpu_waiting": not lane_workers(Lane.GPU),
        "active_runs": [run_summary(run) for run in
                        TestRun.objects.filter(state__in=ACTIVE_RUN_STATES, parent__isnull=True)[:3]],
        # the run whose per-task progress the board's rows show (the same choice as the rows')
        "progress_run_id": getattr(active_run(), "pk", None),
    }


def stale_known_failures(run: TestRun) -> list[dict]:
    """The spec-declared known failures this run (and its release lanes) judged configs of but never reproduced
    (``apitester.known``: the definition), each with a one-line description."""
    runs = [run, *run.lanes.all()] if run.pk else [run]
    rows = ConfigResult.objects.filter(run__in=runs).values_list(
        "failing_config__config", "status", "direction", "paddle_version")
    verdicts = ({"config": config, "status": status, "direction": direction or None, "paddle_version": version}
                for config, status, direction, version in rows.iterator())
    return [{**stale, "line": describe_stale(stale)} for stale in known_failures.stale_known_failures(verdicts)]
