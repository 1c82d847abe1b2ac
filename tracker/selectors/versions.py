"""Data versions: a short digest of exactly the rows a page shows, to cache its rendering per data change.

A version is recomputed from the database on every request (a few small queries over the board's few
hundred task, claim and PR rows plus aggregates over the configs), so no write path has to remember to
bump it: a comment applied by the webhook, the poller, a site claim, a report import or the admin all
change it, in any process. Whatever changes the version invalidates the cached rendering and the ETag.
"""
from __future__ import annotations

import hashlib

from django.db.models import Count, Max, OuterRef, Q, Subquery

from ..models import (Claim, ConfigResult, Contributor, Diagnosis, Event, FailingConfig, PullRequest, ReportedDiff,
                      SyncCursor, Task, TestRun)
from ..vocab import ACTIVE_RUN_STATES, EventKind
from .runs import lane_workers

def _digest(*parts) -> str:
    digest = hashlib.blake2b(digest_size=12)
    for part in parts:
        digest.update(repr(part).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()

def board_version() -> str:
    """Everything the board page and /api/tasks show: tasks, claims, PRs, contributors, config counts."""
    return _digest(
        list(Task.objects.order_by("pk").values_list("pk", "number", "api", "kernel", "status", "locked_reason")),
        list(Claim.objects.order_by("pk").values_list("pk", "task_id", "contributor_id", "status", "withdrawn_at")),
        list(PullRequest.objects.order_by("pk").values_list("pk", "repo", "number", "state", "title", "author_id")),
        list(PullRequest.tasks.through.objects.order_by("pk").values_list("pk", "pullrequest_id", "task_id")),
        list(Contributor.objects.order_by("pk").values_list("pk", "login")),
        # the newest config (an index's last entry; counting 60,000 configs cost ~50 ms a request): configs change
        # with a report import, whose Event is below
        FailingConfig.objects.aggregate(last=Max("pk")),
        # re-test verdicts feed the board's verification / "fixed in" columns: the newest result (an index's last
        # entry; counting a year of results took ~0.3 s a request) and the runs (deleting one deletes its results)
        ConfigResult.objects.aggregate(last=Max("pk")),
        TestRun.objects.aggregate(n=Count("pk"), last=Max("pk")),
        Diagnosis.objects.aggregate(n=Count("pk"), last=Max("pk")),  # the distinct-failures column
        Event.objects.filter(task__isnull=True, kind__in=[EventKind.REPORT_IMPORT, EventKind.TRACKING_SUMMARY])
        .aggregate(last=Max("pk")),
        # a poll that read the PR search: "completed N" instead of "unknown offline" (selectors.board.pr_states_known;
        # the PRs' states are above)
        list(SyncCursor.objects.filter(key__startswith="pulls:").order_by("pk").values_list("pk", "etag", "since")),
        # the running run's per-task progress is shown on the rows from its start to its end
        list(TestRun.objects.filter(state__in=ACTIVE_RUN_STATES, parent__isnull=True).order_by("pk")
             .values_list("pk", "state")),
    )

def _aggregate(model, task_id, **aggregates) -> dict[str, Subquery]:
    """Correlated subqueries of aggregates over a task's rows, to fold into the task's own query."""
    rows = model.objects.filter(task_id=OuterRef("pk")).order_by().values("task_id")
    return {name: Subquery(rows.annotate(value=aggregate).values("value")) for name, aggregate in aggregates.items()}

def task_version(task_id: int) -> str:
    """What one task page shows: the task, its claims and PRs, configs, results, runs and events."""
    # One query for the task and the aggregates over its configs, results and events.
    task = list(Task.objects.filter(pk=task_id).annotate(
        **_aggregate(FailingConfig, task_id, fc_n=Count("pk"), fc_last=Max("pk"), fc_seen=Max("last_seen"),
                     fc_gone=Max("gone_since"), fc_current=Count("pk", filter=Q(in_latest_report=True))),
        # The task's newest run with a result, read off the (task, run) index's last entry (an aggregate reads every
        # result of the task: 0.3 s for the 400,000 of a year-old board's task); a result stored into an older run (a
        # resumed shard) is stored while that run is active, and the active runs are below.
        cr_run=Subquery(ConfigResult.objects.filter(task_id=OuterRef("pk")).order_by("-run_id").values("run_id")[:1]),
        **_aggregate(Diagnosis, task_id, dg_n=Count("pk"), dg_last=Max("pk")),
        **_aggregate(ReportedDiff, task_id, rd_n=Count("pk"), rd_last=Max("pk")),
        **_aggregate(Event, task_id, ev_n=Count("pk"), ev_last=Max("pk")),
    ).values_list("number", "api", "kernel", "status", "locked_reason", "fc_n", "fc_last", "fc_seen", "fc_gone",
                  "fc_current", "cr_run", "dg_n", "dg_last", "rd_n", "rd_last", "ev_n", "ev_last"))
    return _digest(
        task,
        list(Claim.objects.filter(task_id=task_id).order_by("pk").values_list(
            "pk", "contributor_id", "status", "withdrawn_at", "source", "source_ref", "created")),
        list(PullRequest.objects.filter(tasks=task_id).order_by("pk").values_list(
            "pk", "repo", "number", "state", "title", "author_id", "part")),
        list(TestRun.objects.filter(state__in=ACTIVE_RUN_STATES).order_by("pk").values_list(
            "pk", "state", "done", "total", "message", "scope")),
        bool(lane_workers("gpu")),
    )

def site_version() -> str:
    """Every other public page (charts, runs, regressions, alignment): the board's version, every run's state and
    progress, and whether each lane has a worker (a queued run's page says it waits for one)."""
    return _digest(
        board_version(),
        list(TestRun.objects.filter(state__in=ACTIVE_RUN_STATES).order_by("pk").values_list("pk", "state", "done")),
        TestRun.objects.aggregate(finished=Max("finished_at"), started=Max("started_at"), states=Count("state")),
        bool(lane_workers("cpu")), bool(lane_workers("gpu")),
    )
