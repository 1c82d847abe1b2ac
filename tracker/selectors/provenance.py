"""Reading provenance (issue #46): under which builds, threads and CPU a run's or a task's verdicts were given, and
the configs whose verdict changes with the thread count alone (thread-sensitive).

A verdict here is the strict layer under the exact rule (exact / within_tolerance / fails, else the strict status):
two thread counts that disagree on it for the same config and the same Paddle build (version and commit) make the
config thread-sensitive; each thread count's latest verdict is compared, so an older run is not held against it."""
from __future__ import annotations

from django.db.models import Count, Max, Q

from ..models import ConfigResult, FailingConfig, Provenance, Task, TestRun
from ..vocab import rule_of

MAX_ROWS = 10  # distinct provenances a page lists (a run has one per worker build and host; more is a mixed fleet)


def provenance_dict(row: Provenance) -> dict:
    """A Provenance row as the engine's JSON names it (apitester.provenance), host included (callers hide it)."""
    return {"paddle_version": row.paddle_version, "paddle_commit": row.paddle_commit,
            "torch_version": row.torch_version, "numpy_version": row.numpy_version, "threads": row.threads,
            "thread_detail": row.thread_detail, "cpu_capability": row.cpu_capability, "host": row.host}


def _rows(results) -> list[dict]:
    counted = list(results.filter(provenance__isnull=False).values("provenance")
                   .annotate(results=Count("id"), last=Max("id")).order_by("-last")[:MAX_ROWS])
    rows = Provenance.objects.in_bulk([item["provenance"] for item in counted])
    return [{**provenance_dict(rows[item["provenance"]]), "results": item["results"]} for item in counted]


def run_provenance(run: TestRun) -> list[dict]:
    """The distinct provenances of a run's verdicts (a matrix run: its lanes'), the most recent first, each with its
    number of results."""
    if not run.pk:
        return []
    return _rows(ConfigResult.objects.filter(Q(run=run) | Q(run__parent=run)))


def task_provenance(task: Task) -> list[dict]:
    """The distinct provenances of a task's verdicts, the most recent first."""
    return _rows(ConfigResult.objects.filter(task=task))


def _verdict(strict: str, status: str, exact) -> str:
    strict = strict or status
    return str(rule_of(strict, exact) or strict)


def thread_sensitive(results) -> dict[int, list[tuple[int, str]]]:
    """config id → [(threads, verdict), ...] for each config whose latest verdicts at two thread counts differ on one
    Paddle build; configs with one thread count, or the same verdict at every count, are left out."""
    latest: dict[tuple, str] = {}
    rows = (results.filter(provenance__threads__isnull=False).order_by("run_id", "id")
            .values_list("failing_config_id", "paddle_version", "paddle_commit", "provenance__threads",
                         "strict_status", "status", "exact"))
    for config_id, version, commit, threads, strict, status, exact in rows:
        latest[(config_id, version, commit, threads)] = _verdict(strict, status, exact)
    by_build: dict[tuple, dict[int, str]] = {}
    for (config_id, version, commit, threads), verdict in latest.items():
        by_build.setdefault((config_id, version, commit), {})[threads] = verdict
    sensitive: dict[int, list[tuple[int, str]]] = {}
    for (config_id, _, _), verdicts in by_build.items():
        if len(set(verdicts.values())) > 1:
            sensitive[config_id] = sorted(verdicts.items())
    return sensitive


def _listed(sensitive: dict[int, list[tuple[int, str]]]) -> list[dict]:
    texts = dict(FailingConfig.objects.filter(pk__in=sensitive).values_list("pk", "config"))
    return [{"config_id": pk, "config": texts.get(pk, ""), "verdicts": sensitive[pk]} for pk in sorted(sensitive)]


def run_thread_sensitive(run: TestRun) -> list[dict]:
    """The thread-sensitive configs among a run's (a matrix run: its lanes'), read over every verdict of them:
    [{config_id, config, verdicts: [(threads, verdict)]}], by config id."""
    if not run.pk:
        return []
    configs = ConfigResult.objects.filter(Q(run=run) | Q(run__parent=run)).values("failing_config_id")
    return _listed(thread_sensitive(ConfigResult.objects.filter(failing_config_id__in=configs)))


def task_thread_sensitive(task: Task) -> list[dict]:
    """The task's thread-sensitive configs, as run_thread_sensitive lists them."""
    return _listed(thread_sensitive(ConfigResult.objects.filter(task=task)))
