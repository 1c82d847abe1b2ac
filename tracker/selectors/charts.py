"""Read paths behind the chart pages: plain numbers (lists and dicts), no plotly here.

Every figure in tracker/figures/ is drawn from these values and every page shows the same values
as a table, so the tests check these numbers against the database directly.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from statistics import median

from django.db.models import Count, Exists, F, Max, Min, OuterRef, Q, Subquery

from ..models import (
    CLAIM_STATUS_RANK,
    UNDATED_SOURCES,
    Claim,
    ClaimStatus,
    ConfigResult,
    Event,
    FailingConfig,
    PullRequest,
    Task,
    TaskStatus,
    TestRun,
)
from ..vocab import FAILING, PASSING, EventKind, FixedInKind, Kernel, VerificationKind
from .releases import fixed_in_by_task
from .reported import configs_reported_by_task_and_report, report_columns
from .runs import main_release_q, verifications_in_own_lane

# "verified": the fix is verified in the task's own lane and was a Paddle fix; "harness_fix": Paddle
# agrees with Torch on every release tested and the PR is in PaddleAPITest (never counted as verified).
FUNNEL_STAGES = ("open", "claimed", "pr_submitted", "completed", "verified", "harness_fix")
# The funnel counts every task, then each kernel's apart.
ALL_KERNELS = "all"
FUNNEL_SCOPES = (ALL_KERNELS, *(kernel.value for kernel in Kernel))
# How far each board status has come along the funnel (locked tasks are outside it).
_STATUS_DEPTH = {
    TaskStatus.OPEN: 0,
    TaskStatus.CLAIMED: 1,
    TaskStatus.PR_SUBMITTED: 2,
    TaskStatus.COMPLETED: 3,
}


# --- verification -------------------------------------------------------------------------------

def verified_task_ids() -> set[int]:
    """Tasks whose fix is verified in their own lane (CPU task → cpu lane), by the runner's rule."""
    return {task_id for task_id, v in verifications_in_own_lane().items() if v.kind == VerificationKind.VERIFIED}


# --- overview: funnel and burn-down -------------------------------------------------------------

def funnel() -> dict[str, dict[str, int]]:
    """Tasks that reached each stage, overall and per kernel; locked tasks are not claimable, so excluded."""
    harness = {task_id for task_id, answer in fixed_in_by_task().items() if answer.kind == FixedInKind.HARNESS}
    verified = verified_task_ids() - harness
    result = {scope: dict.fromkeys(FUNNEL_STAGES, 0) for scope in FUNNEL_SCOPES}
    for task_id, kernel, status in Task.objects.values_list("id", "kernel", "status"):
        if status == TaskStatus.LOCKED:
            continue
        depth = _STATUS_DEPTH.get(status, 0)
        for scope in (ALL_KERNELS, kernel):
            counts = result[scope]
            counts["open"] += 1
            if depth >= 1:
                counts["claimed"] += 1
            if depth >= 2:
                counts["pr_submitted"] += 1
            if depth >= 3:
                counts["completed"] += 1
            if task_id in verified:
                counts["verified"] += 1
            if task_id in harness:
                counts["harness_fix"] += 1
    return result


# The burn-down's series read from what the board writes: the Events of claims (comments, PRs, the site,
# the board import) and PR links, the runner's fix_verified Events, and the merge time GitHub reports on
# each PullRequest (a PR first seen already merged writes no state Event, so merges come from the row).
BURNDOWN_EVENT_KINDS = {
    "claims": (EventKind.CLAIMED,),
    "prs": (EventKind.PR_LINKED,),
    "verified": (EventKind.FIX_VERIFIED,),
}
BURNDOWN_SERIES = ("claims", "prs", "merged", "verified")
# Every other kind, and why no chart reads it: each kind the services write is either drawn or listed here.
UNCHARTED_EVENT_KINDS = {
    EventKind.TASK_CREATED: "the board's own bookkeeping; tasks are counted from Task rows",
    EventKind.VERDICT_REREAD: "a config's final status re-read by a diagnosis; the charts read ConfigResult",
    EventKind.TASK_CHANGED: "bookkeeping of the board import",
    EventKind.LOCKED: "locked tasks are left out of every chart (Task.status)",
    EventKind.UNLOCKED: "the funnel reads Task.status",
    EventKind.STATUS: "the funnel reads Task.status",
    EventKind.PR_AUTHOR: "contributor stats read PullRequest.author",
    EventKind.TRACKING_SUMMARY: "the tracking issue's own figures, shown beside the counts (selectors.board.tracking_summary)",
    EventKind.WITHDRAWN: "a claim once made stays in the burn-down's cumulative count",
    EventKind.CLAIM_STATUS: "contributor stats read Claim.status",
    EventKind.CLAIM_KEPT: "no change: a comment or PR left a claim as it was",
    EventKind.CLAIM_REJECTED: "nothing was claimed",
    EventKind.COMMENT_REJECTED: "nothing was claimed",
    EventKind.COMMENT_ERRORS: "nothing was claimed",
    EventKind.COMMENT_POSTED: "the claim it posted is its own claimed Event",
    EventKind.PR_UNLINKED: "a PR once linked stays in the burn-down's cumulative count",
    EventKind.PR_STATE: "merges come from PullRequest.merged_at (a PR first seen merged writes no state Event)",
    EventKind.PR_REJECTED: "the PR linked no task",
    EventKind.PR_UNKNOWN_TASK: "the PR named no task of the board",
    EventKind.CONFIGS_IMPORTED: "the report history reads FailingConfig.first_seen / last_seen",
    EventKind.REPORT_IMPORT: "the report history reads FailingConfig.first_seen / last_seen",
    EventKind.REGRESSION: "the pass → fail transitions chart reads the results themselves",
}


def burndown_from_events() -> dict:
    """Cumulative count of distinct tasks per day that got a claim, a PR, a merge, a verification.

    Only dated evidence draws a day: an Event from an undated source (UNDATED_SOURCES — a claim or PR link imported
    from the tracking issue's text happened some time before the import, and its `created` is the import's time) is
    left out of the series, so the burn-down starts at the first dated event instead of piling the whole imported
    board on the import day. What only the import knows is counted apart: `before_import` (tasks per series with
    undated evidence and none dated, and `unclaimed` after them) with `import_day`, the newest import's date.
    """
    kind_to_series = {kind: series for series, kinds in BURNDOWN_EVENT_KINDS.items() for kind in kinds}
    first_day: dict[str, dict[int, date]] = defaultdict(dict)
    undated: dict[str, set[int]] = defaultdict(set)
    import_day: date | None = None

    def first_seen_on(series: str, task_id: int, day: date) -> None:
        days_seen = first_day[series]
        if task_id not in days_seen or day < days_seen[task_id]:
            days_seen[task_id] = day

    events = Event.objects.filter(kind__in=kind_to_series, task__isnull=False).values_list("kind", "task_id", "created", "source")
    for kind, task_id, created, source in events:
        if source in UNDATED_SOURCES:
            undated[kind_to_series[kind]].add(task_id)
            import_day = max(import_day or created.date(), created.date())
        else:
            first_seen_on(kind_to_series[kind], task_id, created.date())
    merges = PullRequest.objects.filter(merged_at__isnull=False, tasks__isnull=False).values_list("tasks", "merged_at")
    for task_id, merged_at in merges:
        first_seen_on("merged", task_id, merged_at.date())
    days = sorted({d for seen in first_day.values() for d in seen.values()})
    out: dict = {"days": [d.isoformat() for d in days]}
    open_tasks = Task.objects.exclude(status=TaskStatus.LOCKED).count()
    for series in BURNDOWN_SERIES:
        per_day = Counter(first_day[series].values())
        running, values = 0, []
        for d in days:
            running += per_day.get(d, 0)
            values.append(running)
        out[series] = values
    # Tasks still without a dated claim, as the board burns down.
    out["unclaimed"] = [open_tasks - c for c in out["claims"]]
    before = {series: len(undated[series] - set(first_day[series])) for series in BURNDOWN_SERIES}
    before["unclaimed"] = open_tasks - len(undated["claims"] | set(first_day["claims"]))
    out["before_import"] = before if any(undated.values()) else None
    out["import_day"] = import_day.isoformat() if import_day else None
    return out


def report_history() -> dict[str, dict[str, list]]:
    """Failing configs listed per report version, per kernel (from first_seen/last_seen of history/)."""
    out: dict[str, dict[str, list]] = {}
    for kernel in Kernel.values:
        # Grouped in SQL: 46 000 configs share a few dozen (first_seen, last_seen) pairs, so the
        # per-day count below loops over pairs, not configs (0.48 s -> a few ms on the real reports).
        spans = list(
            FailingConfig.objects.filter(task__kernel=kernel, first_seen__isnull=False)
            .values_list("first_seen", "last_seen").annotate(n=Count("id")).order_by()
        )
        days = sorted({d for first, last, _n in spans for d in (first, last) if d})
        counts = [sum(n for first, last, n in spans if first <= d <= (last or first)) for d in days]
        out[kernel] = {"days": [d.isoformat() for d in days], "configs": counts}
    return out


# --- heatmap: tasks × runs ----------------------------------------------------------------------

@dataclass
class TaskRunMatrix:
    tasks: list[dict] = field(default_factory=list)      # [{"number", "api", "kernel"}] in row order
    columns: list[dict] = field(default_factory=list)    # [{"id", "label", "lane", "paddle_version"}]
    fail_fraction: list[list] = field(default_factory=list)   # rows × columns, None = not run
    log10_rel: list[list] = field(default_factory=list)
    counts: list[list] = field(default_factory=list)     # "failing/total" strings for hover and table
    # metric "reported": columns are PaddleAPITest's reports, cells the number of the task's configs it logged a diff for
    reported_configs: list[list] = field(default_factory=list)


def task_run_matrix(max_runs: int = 30) -> TaskRunMatrix:
    runs = list(
        TestRun.objects.filter(Exists(ConfigResult.objects.filter(run=OuterRef("pk"))))
        .order_by("-created", "-id")[:max_runs]
        .values("id", "lane", "paddle_version", "created")
    )
    runs.reverse()
    run_index = {run["id"]: i for i, run in enumerate(runs)}
    tasks = list(Task.objects.order_by("kernel", "number").values("id", "number", "api", "kernel"))
    task_index = {task["id"]: i for i, task in enumerate(tasks)}
    matrix = TaskRunMatrix(
        tasks=[{k: t[k] for k in ("number", "api", "kernel")} for t in tasks],
        columns=[
            {
                "id": run["id"],
                "label": f"#{run['id']} {run['lane']} {run['created']:%m-%d}",
                "lane": run["lane"],
                "paddle_version": run["paddle_version"],
            }
            for run in runs
        ],
    )
    matrix.fail_fraction = [[None] * len(runs) for _ in tasks]
    matrix.log10_rel = [[None] * len(runs) for _ in tasks]
    matrix.counts = [[""] * len(runs) for _ in tasks]
    rows = (
        ConfigResult.objects.filter(run_id__in=run_index)
        .values("task_id", "run_id")
        .annotate(
            total=Count("id"),
            failing=Count("id", filter=Q(status__in=FAILING)),
            worst_rel=Max("max_rel", filter=Q(status__in=FAILING)),
        )
    )
    for row in rows:
        r, c = task_index[row["task_id"]], run_index[row["run_id"]]
        matrix.fail_fraction[r][c] = round(row["failing"] / row["total"], 4) if row["total"] else None
        worst = row["worst_rel"]
        matrix.log10_rel[r][c] = round(math.log10(worst), 3) if worst and worst > 0 and math.isfinite(worst) else None
        matrix.counts[r][c] = f"{row['failing']}/{row['total']}"
    return matrix


def task_report_matrix() -> TaskRunMatrix:
    """Tasks × PaddleAPITest reports: how many of the task's configs each report logged a diff for (the
    report's own evidence, so GPU tasks, which no run here can re-test, are not blank)."""
    columns = report_columns()
    column_index = {(c["device"], c["report_date"], c["category"]): i for i, c in enumerate(columns)}
    tasks = list(Task.objects.order_by("kernel", "number").values("id", "number", "api", "kernel"))
    task_index = {task["id"]: i for i, task in enumerate(tasks)}
    matrix = TaskRunMatrix(
        tasks=[{k: t[k] for k in ("number", "api", "kernel")} for t in tasks],
        columns=[{"id": i, "label": f"{c['device']} {c['report_date'] or '?'} {c['category']}", "lane": c["device"].lower(),
                  "paddle_version": "PaddleAPITest"} for i, c in enumerate(columns)],
    )
    matrix.reported_configs = [[None] * len(columns) for _ in tasks]
    matrix.counts = [[""] * len(columns) for _ in tasks]
    for cell in configs_reported_by_task_and_report():
        r, c = task_index[cell["task_id"]], column_index[(cell["device"], cell["report_date"], cell["category"])]
        matrix.reported_configs[r][c] = cell["configs"]
        worst = cell["max_rel"]
        matrix.counts[r][c] = f"worst rel {worst:.3g}" if worst is not None else "no numbers"
    return matrix


# --- one task: configs × runs, latest verdicts, diff maps ---------------------------------------

def task_config_matrix(task: Task, max_configs: int = 150, max_runs: int = 20) -> dict:
    runs = list(  # one index probe per run, not a join over the task's every result
        TestRun.objects.filter(Exists(ConfigResult.objects.filter(run=OuterRef("pk"), task=task)))
        .order_by("-created", "-id")[:max_runs]
        .values("id", "lane", "paddle_version", "created")
    )
    runs.reverse()
    run_ids = [run["id"] for run in runs]
    results = list(
        ConfigResult.objects.filter(task=task, run_id__in=run_ids)
        .values("failing_config_id", "run_id", "status", "max_rel")
    )
    # Show the configs that fail most often first; a task can have thousands of configs.
    fail_count = Counter(r["failing_config_id"] for r in results if r["status"] in FAILING)
    seen_ids = {r["failing_config_id"] for r in results}
    config_ids = sorted(seen_ids, key=lambda cid: (-fail_count[cid], cid))[:max_configs]
    index = {cid: i for i, cid in enumerate(config_ids)}
    configs = dict(FailingConfig.objects.filter(id__in=config_ids).values_list("id", "config"))
    col = {rid: i for i, rid in enumerate(run_ids)}
    status_grid = [[None] * len(run_ids) for _ in config_ids]
    for r in results:
        i = index.get(r["failing_config_id"])
        if i is None:
            continue
        status_grid[i][col[r["run_id"]]] = r["status"]
    return {
        "runs": [{"id": run["id"], "label": f"#{run['id']} {run['lane']}", "paddle_version": run["paddle_version"]} for run in runs],
        "configs": [{"id": cid, "config": configs.get(cid, "")} for cid in config_ids],
        "status": status_grid,
        "hidden_configs": max(0, len(seen_ids) - len(config_ids)),
    }


def diff_map_for(result_id: int) -> dict | None:
    row = ConfigResult.objects.filter(id=result_id).values("diff_map", "failing_config__config", "status").first()
    if not row or not row["diff_map"]:
        return None
    return {"config": row["failing_config__config"], "status": row["status"], "diff_map": row["diff_map"]}


# --- contributors -------------------------------------------------------------------------------

def contributor_stats() -> list[dict]:
    """Per contributor: tasks claimed / PR submitted / completed / verified and median lead times (days)."""
    verified = verified_task_ids()
    stats: dict[str, dict] = {}
    claims = Claim.objects.filter(withdrawn_at__isnull=True).exclude(task__status=TaskStatus.LOCKED)
    for login, task_id, status, created, source in claims.values_list("contributor__login", "task_id", "status", "created",
                                                                      "source"):
        entry = stats.setdefault(
            login, {"login": login, "claimed": 0, "pr_submitted": 0, "completed": 0, "verified": 0,
                    "_claimed_at": {}, "claim_to_pr": [], "pr_to_merge": []},
        )
        entry["claimed"] += 1
        rank = CLAIM_STATUS_RANK.get(status, 0)
        if rank >= CLAIM_STATUS_RANK[ClaimStatus.PR_SUBMITTED]:
            entry["pr_submitted"] += 1
        if status == ClaimStatus.COMPLETED:
            entry["completed"] += 1
        if task_id in verified:
            entry["verified"] += 1
        if source not in UNDATED_SOURCES:  # an imported claim has no date: no lead time from it
            entry["_claimed_at"][task_id] = created
    prs = PullRequest.objects.filter(author__isnull=False, created_at__isnull=False).prefetch_related("tasks")
    for pr in prs.select_related("author"):
        entry = stats.get(pr.author.login)
        if not entry:
            continue
        for task in pr.tasks.all():
            claimed_at = entry["_claimed_at"].get(task.id)
            if claimed_at and pr.created_at >= claimed_at:
                entry["claim_to_pr"].append((pr.created_at - claimed_at).total_seconds() / 86400)
        if pr.merged_at:
            entry["pr_to_merge"].append((pr.merged_at - pr.created_at).total_seconds() / 86400)
    rows = []
    for entry in stats.values():
        entry.pop("_claimed_at")
        entry["median_claim_to_pr_days"] = round(median(entry["claim_to_pr"]), 1) if entry["claim_to_pr"] else None
        entry["median_pr_to_merge_days"] = round(median(entry["pr_to_merge"]), 1) if entry["pr_to_merge"] else None
        del entry["claim_to_pr"], entry["pr_to_merge"]
        rows.append(entry)
    rows.sort(key=lambda e: (-e["completed"], -e["pr_submitted"], -e["claimed"], e["login"]))
    return rows


# --- pass → fail transitions --------------------------------------------------------------------
#
# The history of regressions, not the board's definition of one (that is tracker/selectors/runs.regressions():
# configs failing *now* after an earlier pass). A transition stays here after the config passes again.

@dataclass
class PassFailTransition:
    """A config that passed in a run of a lane and failed in the next run of that lane that judged it."""
    task_number: int
    api: str
    failing_config_id: int
    config: str
    lane: str
    status: str  # the failing verdict
    passed_run_id: int
    passed_version: str
    passed_at: datetime
    failed_run_id: int
    failed_version: str
    failed_at: datetime


def pass_fail_transitions(task: Task | None = None, limit: int | None = None) -> list[PassFailTransition]:
    """Every pass → fail step between two consecutive judged verdicts of a config in one lane, newest first.

    Only pass/fail verdicts count: an engine gap between two runs neither makes nor hides a step (the
    same rule as regressions()). One pass over the judged results, ordered by config then run (runs are
    numbered in creation order); the lane comes from a small run table instead of a join.
    """
    runs = {r["id"]: r for r in TestRun.objects.values("id", "lane", "paddle_version", "created")}

    # The main release's runs only: a matrix run's look back at an older release is not a newer verdict.
    judged = ConfigResult.objects.filter(main_release_q(), status__in=PASSING | FAILING)
    if task is not None:
        judged = judged.filter(task=task)
    # Only configs with a failure after their first pass can hold a transition; the database finds
    # them in one aggregate so the scan below reads a few rows instead of every verdict.
    candidates = (
        judged.values("failing_config_id")
        .annotate(first_pass=Min("run_id", filter=Q(status__in=PASSING)),
                  last_fail=Max("run_id", filter=Q(status__in=FAILING)))
        .filter(last_fail__gt=F("first_pass"))
        .values("failing_config_id")
    )
    judged = judged.filter(failing_config_id__in=Subquery(candidates))
    rows = judged.order_by("failing_config_id", "run_id").values_list("failing_config_id", "run_id", "status", "task_id")
    hits = []
    last: dict[str, tuple[int, int, str]] = {}  # lane -> (config id, run id, status) of the previous verdict
    for config_id, run_id, status, task_id in rows.iterator(chunk_size=5000):
        lane = runs[run_id]["lane"]
        previous = last.get(lane)
        if previous and previous[0] == config_id and previous[2] in PASSING and status in FAILING:
            hits.append((config_id, lane, previous[1], run_id, status, task_id))
        last[lane] = (config_id, run_id, status)
    if not hits:
        return []
    configs = dict(FailingConfig.objects.filter(id__in={h[0] for h in hits}).values_list("id", "config"))
    tasks = {t["id"]: t for t in Task.objects.filter(id__in={h[5] for h in hits}).values("id", "number", "api")}
    out = [
        PassFailTransition(
            task_number=tasks[task_id]["number"], api=tasks[task_id]["api"], failing_config_id=config_id,
            config=configs.get(config_id, ""), lane=lane, status=status,
            passed_run_id=passed_run, passed_version=runs[passed_run]["paddle_version"],
            passed_at=runs[passed_run]["created"],
            failed_run_id=failed_run, failed_version=runs[failed_run]["paddle_version"],
            failed_at=runs[failed_run]["created"],
        )
        for config_id, lane, passed_run, failed_run, status, task_id in hits
    ]
    out.sort(key=lambda r: (r.failed_at, r.task_number, r.failing_config_id), reverse=True)
    return out[:limit] if limit else out
