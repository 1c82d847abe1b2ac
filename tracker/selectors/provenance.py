"""Reading provenance (issue #46): under which builds, threads and CPU a run's or a task's verdicts were given, and
the configs whose verdict changes with the thread count alone (thread-sensitive).

A verdict here is the strict layer under the exact rule (exact / within_tolerance / fails, else the strict status):
two thread counts that disagree on it for the same config, the same Paddle build (version and commit) and the same
Torch make the config thread-sensitive; two Torch versions that disagree with the build and threads held are the
reference drift (torch_drift); each thread count's latest verdict is compared, so an older run is not held against it."""
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
    Paddle build and Torch version; configs with one thread count, or the same verdict at every count, are left out."""
    rows = (results.filter(provenance__threads__isnull=False).order_by("run_id", "id")
            .values_list("failing_config_id", "provenance__paddle_version", "provenance__paddle_commit",
                         "provenance__torch_version", "provenance__threads", "strict_status", "status", "exact"))
    return _sensitive((config_id, (version, commit, torch), threads, _verdict(strict, status, exact))
                      for config_id, version, commit, torch, threads, strict, status, exact in rows)


def torch_drift(results) -> dict[int, list[tuple[str, str]]]:
    """The reference drift (issue #46): config id → [(torch version, verdict), ...] for each config whose latest
    verdicts under two Torch versions differ while the Paddle build and the thread count are the same — only Torch
    moved."""
    rows = (results.filter(provenance__isnull=False).exclude(provenance__torch_version="").order_by("run_id", "id")
            .values_list("failing_config_id", "provenance__paddle_version", "provenance__paddle_commit",
                         "provenance__threads", "provenance__torch_version", "strict_status", "status", "exact"))
    return _sensitive((config_id, (version, commit, threads), torch, _verdict(strict, status, exact))
                      for config_id, version, commit, threads, torch, strict, status, exact in rows)


def _sensitive(rows) -> dict[int, list]:
    """(config id, what is held fixed, the axis' value, verdict) rows in run order → config id → [(value, verdict)]
    of the configs whose latest verdicts at two values of the axis differ with everything else held."""
    latest: dict[tuple, str] = {}
    for config_id, fixed, value, verdict in rows:
        latest[(config_id, fixed, value)] = verdict
    by_fixed: dict[tuple, dict] = {}
    for (config_id, fixed, value), verdict in latest.items():
        by_fixed.setdefault((config_id, fixed), {})[value] = verdict
    sensitive: dict[int, list] = {}
    for (config_id, _fixed), verdicts in by_fixed.items():
        if len(set(verdicts.values())) > 1:
            sensitive[config_id] = sorted(verdicts.items())
    return sensitive


def drift_report(lane: str | None = None) -> list[dict]:
    """Per API, the configs whose strict/exact verdict changes when only Torch moves (torch_drift over every stored
    verdict, a lane's tasks only when named): [{api, configs: [{config, verdicts}]}], by API."""
    results = ConfigResult.objects.all()
    if lane:
        results = results.filter(run__lane=lane)
    drift = torch_drift(results)
    configs = FailingConfig.objects.filter(pk__in=drift).values_list("pk", "config", "task__api")
    by_api: dict[str, list[dict]] = {}
    for pk, config, api in configs:
        by_api.setdefault(api, []).append({"config": config, "verdicts": drift[pk]})
    return [{"api": api, "configs": sorted(rows, key=lambda r: r["config"])} for api, rows in sorted(by_api.items())]


def _listed(sensitive: dict[int, list[tuple[int, str]]]) -> list[dict]:
    texts = dict(FailingConfig.objects.filter(pk__in=sensitive).values_list("pk", "config"))
    return [{"config_id": pk, "config": texts.get(pk, ""), "verdicts": sensitive[pk]} for pk in sorted(sensitive)]


def run_thread_sensitive(run: TestRun) -> list[dict]:
    """The thread-sensitive configs among a run's (a matrix run: its lanes'), read over every verdict of them:
    [{config_id, config, verdicts: [(threads, verdict)]}], by config id."""
    if not run.pk:
        return []
    configs = ConfigResult.objects.filter(Q(run=run) | Q(run__parent=run)).values("failing_config_id")
    return _listed(thread_sensitive(_at_two_counts(ConfigResult.objects.filter(failing_config_id__in=configs))))


def task_thread_sensitive(task: Task) -> list[dict]:
    """The task's thread-sensitive configs, as run_thread_sensitive lists them."""
    return _listed(thread_sensitive(_at_two_counts(ConfigResult.objects.filter(task=task))))


def _at_two_counts(results):
    """The results of the configs judged at two thread counts or more: the database counts them, so a page reads the
    rows of those configs only (a 15,000-config run judged at one count reads none)."""
    configs = (results.filter(provenance__threads__isnull=False).values("failing_config_id")
               .annotate(counts=Count("provenance__threads", distinct=True)).filter(counts__gt=1)
               .values("failing_config_id"))
    return results.filter(failing_config_id__in=configs)
