"""The board's vocabularies: event kinds, run states, and the verdict statuses with their classes.

The statuses are the engine's (apitester.vocab, Django-free, since the engine produces them); they are
re-exported here so the board reads every vocabulary from one module. All members are ``str``s: the
database, the JSON API and the templates see plain strings.
"""
from __future__ import annotations

from enum import StrEnum

from django.db import models
from django.utils.translation import gettext_lazy as _

from apitester.vocab import (  # noqa: F401  (the board's statuses and classes, re-exported)
    BY_DESIGN,
    CLASSES,
    FAILING,
    NO_VERDICT,
    PASSING,
    RUNNER_FAILURES,
    TORCH_SUSPECT,
    Status,
    is_failing,
    is_passing,
    status_class,
)


class EventKind(StrEnum):
    """What an Event records. Every kind a service writes is one of these (tests/charts/test_vocab.py)."""
    # the board import (services/board_import.py)
    TASK_CREATED = "task_created"
    TASK_CHANGED = "task_changed"
    LOCKED = "locked"
    UNLOCKED = "unlocked"
    STATUS = "status"
    PR_AUTHOR = "pr_author"
    # claims from comments, PRs, the site and the board import (services/claims.py, pull_requests.py)
    CLAIMED = "claimed"
    WITHDRAWN = "withdrawn"
    CLAIM_STATUS = "claim_status"
    CLAIM_KEPT = "claim_kept"
    CLAIM_REJECTED = "claim_rejected"
    COMMENT_REJECTED = "comment_rejected"
    COMMENT_ERRORS = "comment_errors"
    COMMENT_POSTED = "comment_posted"
    # pull requests (services/pull_requests.py)
    PR_LINKED = "pr_linked"
    PR_UNLINKED = "pr_unlinked"
    PR_STATE = "pr_state"
    PR_REJECTED = "pr_rejected"
    PR_UNKNOWN_TASK = "pr_unknown_task"
    # report import (services/report_import.py)
    CONFIGS_IMPORTED = "configs_imported"
    REPORT_IMPORT = "report_import"
    # the runner (services/runs/outcomes.py: record_run_outcomes)
    FIX_VERIFIED = "fix_verified"
    REGRESSION = "regression"
    # diagnoses (services/diagnoses.py: apply_implied_verdict)
    VERDICT_REREAD = "verdict_reread"


class RunState(models.TextChoices):
    """A TestRun's state (TestRun.State)."""
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    CANCELLED = "cancelled", _("cancelled")
    FAILED = "failed", _("failed")


# A run in one of these states still has work to do (an executor may claim it, or is working on it).
ACTIVE_RUN_STATES = (RunState.QUEUED, RunState.RUNNING)


class WaitingReason(models.TextChoices):
    """What a queued or running run waits for (TestRun.waiting), written with the message that says it in words.

    The sweeps find their runs by it (services/runs/sweep.py): a decline's run goes back on the queue when a worker
    that can run it starts; an executor error's run is re-queued by the stale sweep with the error kept in its
    message; a resent job's message is refreshed at each resend.
    """
    NONE = "", _("nothing in particular")
    GPU_WORKER = "gpu_worker", _("a GPU worker (a CPU-only worker declined it)")
    RELEASE_WORKER = "release_worker", _("a worker with its Paddle release (a worker without it declined it)")
    RESENT = "resent", _("a worker to take its job, sent again, off the queue")
    EXECUTOR_ERROR = "executor_error", _("the stale sweep (its executor stopped on an error)")
