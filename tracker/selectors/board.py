"""Read paths of the board: the filtered, sorted task list, one task, one contributor.

Counts come from correlated subqueries rather than JOIN + COUNT so that claims, PRs and the ~46k failing
configs never multiply each other's rows; claimants and PRs are prefetched (a fixed number of queries for
all 183 rows).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, IntegerField, Max, Min, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from ..models import (CLAIM_STATUS_RANK, Claim, ClaimStatus, Contributor, Event, FailingConfig, Kernel, PullRequest,
                      SyncCursor, Task, TaskStatus)
from ..vocab import FIX_LANDED, EventKind, ExactKind, FixedInKind, VerificationKind
from .alignment import exact_by_task
from .releases import fixed_in_by_task
from .runs import verifications_in_own_lane

# sort key → ORDER BY (the task number breaks ties so the order is stable)
SORT_FIELDS = {
    "number": ("number",),
    "api": ("api", "number"),
    "kernel": ("kernel", "number"),
    "status": ("status", "number"),
    "claimants": ("n_claimants", "number"),
    "prs": ("n_prs", "number"),
    "configs": ("n_configs", "number"),
}


class FilterError(ValueError):
    pass


@dataclass
class BoardFilters:
    kernel: str = ""
    status: str = ""
    contributor: str = ""
    q: str = ""
    open_only: bool = False
    # "fixed upstream, task still open": every judged config passes on the newest release tested, the task
    # isn't completed (the list maintainers close).
    fixed_upstream: bool = False
    # "fixed in the test engine": Paddle agrees with Torch on every release tested and the task's PR is in
    # PaddleAPITest (selectors.releases.as_harness_fix); never among the fixed upstream.
    harness_fix: bool = False
    # the exact rule on the task's newest release (selectors.alignment.ExactAnswer.kind): all / partly / none exact
    exact: str = ""
    sort: str = "number"
    errors: list[str] = field(default_factory=list)

    # The query parameters from_params reads (the board and /api/tasks read no other).
    PARAMS = ("kernel", "status", "contributor", "q", "open", "fixed_upstream", "harness_fix", "exact", "sort")

    @classmethod
    def from_params(cls, params) -> "BoardFilters":
        """Read filters from a QueryDict; unknown values are collected in `errors` and ignored."""
        filters = cls()
        kernel = params.get("kernel", "").strip().upper()
        if kernel:
            if kernel in Kernel.values:
                filters.kernel = kernel
            else:
                filters.errors.append(_("Unknown kernel %(value)r: use CPU or GPU.") % {"value": params.get("kernel")})
        status = params.get("status", "").strip().lower()
        if status:
            if status in TaskStatus.values:
                filters.status = status
            else:
                filters.errors.append(
                    _("Unknown status %(value)r: use one of %(choices)s.") % {"value": params.get("status"), "choices": ", ".join(TaskStatus.values)}
                )
        filters.contributor = params.get("contributor", "").strip().lstrip("@")
        filters.q = params.get("q", "").strip()
        filters.open_only = params.get("open", "").strip().lower() in {"1", "true", "yes", "on"}
        filters.fixed_upstream = params.get("fixed_upstream", "").strip().lower() in {"1", "true", "yes", "on"}
        filters.harness_fix = params.get("harness_fix", "").strip().lower() in {"1", "true", "yes", "on"}
        exact = params.get("exact", "").strip().lower()
        if exact:
            if exact in ExactKind.__members__.values():
                filters.exact = exact
            else:
                filters.errors.append(_("Unknown exact %(value)r: use one of %(choices)s.") % {
                    "value": params.get("exact"), "choices": ", ".join(k.value for k in ExactKind)})
        sort = params.get("sort", "").strip() or "number"
        if sort.lstrip("-") in SORT_FIELDS:
            filters.sort = sort
        else:
            filters.errors.append(_("Unknown sort %(value)r: use one of %(choices)s.") % {"value": sort, "choices": ", ".join(SORT_FIELDS)})
        return filters


    def cache_key(self) -> tuple:
        """What the filtered rows depend on (the errors are shown outside the cached rows)."""
        return (self.kernel, self.status, self.contributor.lower(), self.q, self.open_only, self.fixed_upstream,
                self.harness_fix, self.exact, self.sort)


def _count(model, **filters):
    subquery = (
        model.objects.filter(**filters).order_by().values(next(iter(filters)).split("__")[0])
        .annotate(n=Count("pk")).values("n")
    )
    return Coalesce(Subquery(subquery, output_field=IntegerField()), Value(0))


def active_claims_prefetch() -> Prefetch:
    return Prefetch(
        "claims",
        queryset=Claim.objects.filter(withdrawn_at__isnull=True).select_related("contributor").order_by("created", "id"),
        to_attr="active_claims",
    )


def board_tasks(filters: BoardFilters | None = None) -> QuerySet:
    filters = filters or BoardFilters()
    # Only the total per task here: counting the configs still in the newest report needs the wide rows of
    # all ~46k configs (the task_id index alone answers the total) and would triple the board's query time.
    tasks = Task.objects.annotate(
        n_configs=_count(FailingConfig, task=OuterRef("pk")),
        n_claimants=_count(Claim, task=OuterRef("pk"), withdrawn_at__isnull=True),
        n_prs=_count(PullRequest.tasks.through, task=OuterRef("pk")),
    ).prefetch_related(
        active_claims_prefetch(),
        Prefetch("pull_requests", queryset=PullRequest.objects.select_related("author").order_by("repo", "number")),
    )
    if filters.kernel:
        tasks = tasks.filter(kernel=filters.kernel)
    if filters.status:
        tasks = tasks.filter(status=filters.status)
    if filters.contributor:
        claimed = Claim.objects.filter(contributor__login__iexact=filters.contributor, withdrawn_at__isnull=True).values("task_id")
        authored = PullRequest.tasks.through.objects.filter(pullrequest__author__login__iexact=filters.contributor).values("task_id")
        tasks = tasks.filter(Q(pk__in=claimed) | Q(pk__in=authored))
    if filters.q:
        text = Q(api__icontains=filters.q)
        if task_number := _task_number(filters.q):
            text |= Q(number=task_number)
        tasks = tasks.filter(text)
    if filters.open_only:
        # open for claiming: nobody holds an active claim and the task is not locked
        tasks = tasks.filter(locked_reason="").exclude(pk__in=Claim.objects.filter(withdrawn_at__isnull=True).values("task_id"))
    if filters.fixed_upstream or filters.harness_fix:
        answers = fixed_in_by_task()
    if filters.fixed_upstream:
        fixed = [task_id for task_id, answer in answers.items() if answer.kind in FIX_LANDED]
        tasks = tasks.filter(pk__in=fixed).exclude(status=TaskStatus.COMPLETED)
    if filters.harness_fix:
        tasks = tasks.filter(pk__in=[task_id for task_id, answer in answers.items() if answer.kind == FixedInKind.HARNESS])
    if filters.exact:
        tasks = tasks.filter(pk__in=[task_id for task_id, answer in exact_by_task().items()
                                     if answer.kind == filters.exact])
    descending = filters.sort.startswith("-")
    order = SORT_FIELDS[filters.sort.lstrip("-")]
    return tasks.order_by(*[("-" if descending and i == 0 else "") + name for i, name in enumerate(order)])


# Task numbers have a few digits; a longer run of digits is searched as text only (int() of thousands of
# digits raises, and a number beyond 64 bits overflows the database's integer).
MAX_TASK_NUMBER_DIGITS = 6


def _task_number(text: str) -> int | None:
    """`123` or `#123` as a task number; None for anything else (`²` is a digit to str.isdigit, not to int)."""
    digits = text.lstrip("#")
    if digits.isascii() and digits.isdecimal() and len(digits) <= MAX_TASK_NUMBER_DIGITS:
        return int(digits)
    return None


def task_numbers() -> list[int]:
    """Every task's number, in order."""
    return list(Task.objects.order_by("number").values_list("number", flat=True))


def task_number_span() -> tuple[int, int] | None:
    """(lowest, highest) task number on the board, None when it has no task: the range a staff form names."""
    span = Task.objects.aggregate(lowest=Min("number"), highest=Max("number"))
    return None if span["lowest"] is None else (span["lowest"], span["highest"])


def board_totals() -> dict:
    """Counts per status and kernel for the board's header."""
    rows = Task.objects.values("kernel", "status").annotate(n=Count("pk")).order_by()
    by_status = {status: 0 for status in TaskStatus.values}
    by_kernel = {kernel: 0 for kernel in Kernel.values}
    for row in rows:
        by_status[row["status"]] += row["n"]
        by_kernel[row["kernel"]] += row["n"]
    status_rows = [(status.value, status.label, by_status[status.value]) for status in TaskStatus]
    return {"total": sum(by_kernel.values()), "by_status": by_status, "by_kernel": by_kernel, "status_rows": status_rows}


def pr_states_known() -> bool:
    """Has GitHub told the board its PRs' states? Only GitHub sets a state (a webhook delivery or a poll: the
    board import leaves every PR `unknown`), and a poll that read the PR search keeps its cursor's ETag or
    `since` (services/github_sync.py). Without either the board is offline as far as PRs go: a "completed"
    count would read 0 for want of news, so the pages say "unknown offline" instead."""
    if PullRequest.objects.exclude(state=PullRequest.State.UNKNOWN).exists():
        return True
    polled = SyncCursor.objects.filter(key__startswith="pulls:").exclude(etag="", since__isnull=True)
    return polled.exists()


def tracking_summary_event() -> Event | None:
    """The newest summary figures imported from the tracking issue's text (services/tracking_summary.py)."""
    return Event.objects.filter(task__isnull=True, kind=EventKind.TRACKING_SUMMARY).order_by("-created", "-id").first()


def tracking_summary() -> dict | None:
    """The tracking issue's own figures as its text says them ({tasks, submitted, claimed, completed, rates,
    source_ref, imported}), or None when none was imported."""
    event = tracking_summary_event()
    if event is None:
        return None
    return {**event.data, "source_ref": event.source_ref, "imported": event.created}


def fix_counts(fixed_in: dict | None = None) -> dict[str, int]:
    """The board's chips beyond the statuses: tasks whose fix is verified in their own lane (a test-engine fix
    is not a Paddle fix, so not counted), and tasks fixed in a Paddle release (failing before it, passing from it
    on: FixedInKind.FIXED)."""
    answers = fixed_in_by_task() if fixed_in is None else fixed_in
    harness = {task_id for task_id, answer in answers.items() if answer.kind == FixedInKind.HARNESS}
    verified = {task_id for task_id, v in verifications_in_own_lane().items() if v.kind == VerificationKind.VERIFIED}
    return {"verified": len(verified - harness),
            "fixed_in_release": sum(1 for answer in answers.values() if answer.kind == FixedInKind.FIXED)}


def latest_report_import() -> Event | None:
    """The newest report import's summary: which APIs had configs but no task on the board."""
    return Event.objects.filter(task__isnull=True, kind=EventKind.REPORT_IMPORT).order_by("-created", "-id").first()


def task_detail(number: int) -> Task:
    """One task with its claims (active and withdrawn), PRs and config counts; raises Task.DoesNotExist."""
    return (
        Task.objects.annotate(
            n_configs=_count(FailingConfig, task=OuterRef("pk")),
            n_current_configs=_count(FailingConfig, task=OuterRef("pk"), in_latest_report=True),
        )
        .prefetch_related(
            Prefetch("claims", queryset=Claim.objects.select_related("contributor").order_by("created", "id")),
            active_claims_prefetch(),
            Prefetch("pull_requests", queryset=PullRequest.objects.select_related("author").order_by("repo", "number")),
        )
        .get(number=number)
    )


def task_configs(task: Task, *, category: str = "", gone: str = "") -> QuerySet:
    configs = task.failing_configs.order_by("-in_latest_report", "category", "id")
    if category:
        configs = configs.filter(category=category)
    if gone == "1":
        configs = configs.filter(in_latest_report=False)
    elif gone == "0":
        configs = configs.filter(in_latest_report=True)
    return configs


def task_config_categories(task: Task) -> list[dict]:
    return list(task.failing_configs.values("category").annotate(n=Count("pk")).order_by("-n", "category"))


def task_events(task: Task, limit: int = 200) -> list[Event]:
    return list(task.events.order_by("-created", "-id")[:limit])


def contributor_detail(login: str) -> tuple[Contributor, list[tuple[str, list[Claim]]], list[Claim], list[PullRequest]]:
    """(contributor, [(claim status, active claims)] by progress, withdrawn claims, authored PRs)."""
    contributor = Contributor.objects.get(login__iexact=login)
    claims = list(contributor.claims.select_related("task").order_by("task__number"))
    groups: dict[str, list[Claim]] = {}
    for claim in claims:
        if claim.withdrawn_at is None:
            groups.setdefault(claim.status, []).append(claim)
    ordered = sorted(groups.items(), key=lambda item: -CLAIM_STATUS_RANK.get(item[0], -1))
    withdrawn = [c for c in claims if c.withdrawn_at is not None]
    prs = list(contributor.pull_requests.prefetch_related("tasks").order_by("repo", "number"))
    return contributor, ordered, withdrawn, prs


def claim_status_label(status: str) -> str:
    try:
        return ClaimStatus(status).label
    except ValueError:
        return status
