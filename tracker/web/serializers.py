"""The JSON API's response bodies, one small serializer per resource (selectors give the values)."""
from __future__ import annotations

from ..models import UNDATED_SOURCES, ConfigResult, Task
from ..selectors import board as board_selectors
from ..selectors import cpu_evidence as cpu_evidence_selectors
from ..selectors import diagnoses as diagnosis_selectors
from ..selectors import releases as release_selectors
from ..selectors import reported as reported_selectors
from ..selectors import runs as run_selectors
from ..selectors import summary as summary_selectors
from ..selectors import visibility


def task(task: Task) -> dict:
    """The JSON shape of a task (board rows need `board_tasks` annotations and prefetches)."""
    return {
        "number": task.number,
        "api": task.api,
        "kernel": task.kernel,
        "status": task.status,
        "locked": task.locked,
        "locked_reason": task.locked_reason,
        "claimants": [claim.contributor.login for claim in task.active_claims],
        "prs": [
            {"repo": pr.repo, "number": pr.number, "state": pr.state, "url": pr.url,
             "author": pr.author.login if pr.author_id else None}
            for pr in task.pull_requests.all()
        ],
        "failing_configs": task.n_configs,
    }


def claim(claim, *, staff: bool) -> dict:
    """A claim; one imported from the tracking issue's text has no date of its own (``created`` is null,
    ``dated`` false: "before import"), its row's time being only the import's."""
    dated = claim.source not in UNDATED_SOURCES
    return {
        "login": claim.contributor.login, "status": claim.status, "source": claim.source,
        "source_ref": visibility.shown_source_ref(claim.source_ref, staff=staff),
        "created": claim.created.isoformat() if dated else None, "dated": dated,
        "withdrawn_at": claim.withdrawn_at.isoformat() if claim.withdrawn_at else None,
    }


def release_grid(panel: dict) -> dict:
    """A task's configs × releases verdicts and its "fixed in" answer (selectors.releases.task_releases_panel)."""
    return {
        "releases": panel["releases"],
        "verdicts": [
            {"config": fc.config, "failing_config": fc.id,
             "by_release": {r: {"status": c.status, "max_abs": c.max_abs, "max_rel": c.max_rel, "run": c.run_id,
                                "paddle_commit": c.paddle_commit, "torch_version": c.torch_version,
                                "inferred": c.inferred, "inferred_from": c.inferred_from or None}
                            for r, c in cells.items()}}
            for fc, cells in panel["rows"]
        ],
        "fixed_in": panel["answer"].as_dict(),
    }


def result(result: ConfigResult) -> dict:
    """One stored verdict with both layers (the adapted one only where the spec adapts)."""
    data = {
        "config": result.failing_config.config, "run": result.run_id, "status": result.status,
        "draw": result.draw or "typical:0",
        "direction": result.direction or None, "statistical": result.statistical,
        "strict": {"status": result.strict, "direction": result.strict_direction or None,
                   "max_abs": result.max_abs, "max_rel": result.max_rel, "mismatched": result.mismatched},
        "adapted": None, "adaptations": result.adaptations or [], "layers_differ": result.layers_differ,
    }
    if result.adapted_status:
        data["adapted"] = {"status": result.adapted_status, "direction": result.adapted_direction or None,
                           "max_abs": result.adapted_max_abs, "max_rel": result.adapted_max_rel,
                           "mismatched": result.adapted_mismatched}
    if result.evidence:
        data["evidence"] = result.evidence
    if result.known_failure:
        data["known_failure"] = result.known_failure
    if result.comparison:
        data["comparison"] = result.comparison
    data["exact_rule"] = exact_rule(result)
    return data


def exact_rule(result: ConfigResult) -> dict:
    """The verdict under the exact rule and, when it is not exact, its readings (docs/verdicts.md)."""
    return {"rule": result.rule, "exact": result.exact, "max_ulp": result.max_ulp, "stable": result.stable,
            "nondeterministic": result.nondeterministic or None, "closer": result.closer or None,
            "closer_code": result.closer_code or None, "closer_output": result.closer_output or None,
            "closer_skipped": result.closer_skipped or None, "paddle_rmse": result.paddle_rmse,
            "torch_rmse": result.torch_rmse}


def task_verdicts(task: Task, lane: str | None = None, latest_own: dict | None = None) -> dict:
    """The re-test part of GET /api/tasks/<n>: the verification and the newest verdict per config (`latest_own`:
    the lane's latest_results when the caller read them)."""
    lane = lane or task.lane
    if latest_own is None:
        latest_own = run_selectors.latest_results(lane=lane, task=task)
    v = run_selectors.task_verification(task, lane, latest_own)
    latest = run_selectors.task_latest_verdicts(task, lane, latest=latest_own)
    return {
        "lane": lane,
        "verification": {"kind": v.kind, "text": v.text, "failing": v.failing, "total": v.total, "gaps": v.gaps,
                         "documented_differences": v.by_design, "torch_suspect": v.torch_suspect,
                         "reasons": list(v.reasons), "paddle_version": v.paddle_version, "flaky": v.flaky},
        "latest_verdicts": [result(r) for r in latest["rows"]],
        "latest_verdicts_hidden": latest["hidden"],
    }


def task_detail(task_row: Task, *, staff: bool, configs_page: int = 1) -> dict:
    """GET /api/tasks/<n>: the task, its claims, the per-release grid, config categories, re-tests and the
    failing configs (a page of them, `?configs_page=N`) with what PaddleAPITest's reports logged for each;
    `staff`: whether the viewer may see site user names (selectors.visibility)."""
    data = task(task_row)
    data["failing_configs_in_latest_report"] = task_row.n_current_configs
    data["claims"] = [claim(c, staff=staff) for c in task_row.claims.all()]
    releases_panel = release_selectors.task_releases_panel(task_row)
    data["releases"] = release_grid(releases_panel)
    data["config_categories"] = {row["category"]: row["n"] for row in board_selectors.task_config_categories(task_row)}
    latest = run_selectors.task_latest(task_row)  # read once, passed to every part that shows a newest verdict
    data["retest"] = task_verdicts(task_row, latest_own=latest.own)
    diagnosis = diagnosis_selectors.task_diagnosis(task_row, latest.cpu)
    data["diagnosis"] = diagnosis.as_dict()
    data["configs"] = reported_selectors.task_configs_reported(task_row, configs_page)
    evidence = cpu_evidence_selectors.task_cpu_evidence(task_row, latest.cpu)  # GPU tasks only: CPU evidence
    data["cpu_evidence"] = evidence.as_dict() if evidence else None
    reproduction = reported_selectors.task_reproduction(task_row, releases_panel["rows"])  # CPU tasks: reported vs re-tested
    data["reproduction"] = reproduction.as_dict() if reproduction else None
    data["summary"] = summary_selectors.task_summary(  # the task card
        task_row, releases_panel=releases_panel, diagnosis=diagnosis, cpu_evidence=evidence, latest=latest).as_dict()
    return data
