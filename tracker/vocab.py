"""The board's vocabularies: event kinds, run states, kernels and lanes, run scopes, what a task's verdicts
say (Verification and FixedIn kinds), and the verdict statuses with their classes.

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
    AdaptationKind,
    CacheEvent,
    NoOracle,
    Reading,
    Rule,
    Side,
    Status,
    is_failing,
    is_passing,
    rule_of,
    status_class,
)
from apitester.engine.phases import Phase

# What a stored verdict's ``phases`` and ``torch_cache`` may name (the engine's vocabularies, as plain strings): the
# keys the store keeps and the run page sums.
PHASE_NAMES = tuple(str(p) for p in Phase)
CACHE_EVENTS = tuple(str(e) for e in CacheEvent)


class EventKind(StrEnum):
    """What an Event records. Every kind a service writes is one of these (tests/charts/test_vocab.py)."""
    # the board import (services/board_import.py)
    TASK_CREATED = "task_created"
    TASK_CHANGED = "task_changed"
    LOCKED = "locked"
    UNLOCKED = "unlocked"
    STATUS = "status"
    PR_AUTHOR = "pr_author"
    # the tracking issue's own summary figures (看板信息: tasks, submitted / claimed, completed), as its text says them
    TRACKING_SUMMARY = "tracking_summary"
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


class Kernel(models.TextChoices):
    """A task's kernel, as the tracking issue names it (Task.kernel)."""
    CPU = "CPU", "CPU"
    GPU = "GPU", "GPU"

    @property
    def lane(self) -> "Lane":
        """The runner lane that re-tests this kernel's configs."""
        return Lane(self.value.lower())


class Lane(models.TextChoices):
    """A run's lane (TestRun.lane): which workers execute it. A task is re-tested in its kernel's lane."""
    CPU = "cpu", "CPU"
    GPU = "gpu", "GPU"

    @property
    def kernel(self) -> Kernel:
        """The kernel whose tasks this lane re-tests."""
        return Kernel(self.value.upper())


def lane_of(kernel: str) -> Lane:
    """The lane of a kernel name ("CPU" -> Lane.CPU); ValueError for a name that is no Kernel."""
    return Kernel(kernel).lane


class ScopeKind(models.TextChoices):
    """What a run's scope names (TestRun.scope["kind"]; services.runs.resolve_scope reads it). Choices, not a
    plain StrEnum, so the staff forms' templates can name its members (Django calls no Choices class)."""
    TASK = "task"          # one task by number
    TASKS = "tasks"        # several tasks by number (a matrix lane, a probe lane)
    API = "api"            # every task of one Paddle API on the lane's kernel
    ALL_OPEN = "all_open"  # every task of the lane's kernel whose fix isn't completed
    ALL = "all"            # every task of the lane's kernel (the first start's re-test)
    CPU_EVIDENCE = "cpu_evidence"  # GPU tasks named by number, run on the cpu lane (services/cpu_evidence.py)


class VerificationKind(StrEnum):
    """What a task's newest verdicts on its lane say about its fix (selectors.runs.Verification)."""
    VERIFIED = "verified"            # every config's strict layer passes: fix verified
    FLAKY = "flaky"                  # every newest verdict passes, but some config's results disagree between runs
    FAILING = "failing"              # some config still fails (the verdict blames Paddle)
    PARTLY_TESTED = "partly_tested"  # none fails, but some configs are not re-tested yet
    BY_DESIGN = "by_design"          # every config differs from Torch by design (documented differences)
    DIFFERS = "differs"              # none fails; some differ from Torch by design or the engine suspects Torch
    ENGINE_GAP = "engine_gap"        # the rest pass, but the engine can't run some (or all) configs
    UNTESTED = "untested"            # no config re-tested yet


# A task whose verification reads one of these differs from Torch without a Paddle failure: its page lists
# the task's pull requests beside the reading.
DIFFERS_FROM_TORCH = frozenset({VerificationKind.BY_DESIGN, VerificationKind.DIFFERS})


class FixedInKind(StrEnum):
    """Where a task's fix landed across Paddle releases (selectors.releases.FixedIn, fixed_in())."""
    FIXED = "fixed"                          # every judged config passes from one release on; failed before
    PASSING = "passing"                      # every judged config passes on every release tested
    HARNESS = "harness"                      # passing, and the fix was a PaddleAPITest (test engine) PR
    REGRESSED = "regressed"                  # a config passing on an older release fails from one release on
    PARTLY_FIXED = "partly_fixed"            # some, not all, configs pass on the newest release
    DIFFERS_ON_LATEST = "differs_on_latest"  # on the newest release none passes and none fails: all differ from Torch
    NEVER = "never"                          # no config passes on the newest release, some fail
    UNTESTED = "untested"                    # no verdict on any release


# Answers the board counts as the fix having landed in Paddle (a harness fix is the test engine's, never Paddle's).
FIX_LANDED = frozenset({FixedInKind.FIXED, FixedInKind.PASSING})


class ExactKind(StrEnum):
    """A task on its newest release under the exact rule (selectors.alignment.ExactAnswer; the board's ?exact=)."""
    ALL = "all"        # every config with a value comparison is exact
    PARTLY = "partly"  # some, not all
    NONE = "none"      # none is


class Advice(StrEnum):
    """The alignment page's sentence for one API x dtype (selectors.alignment.advice)."""
    FIX_NONDETERMINISM = "fix_nondeterminism"        # Paddle gives other bits on a second run: fix that first
    KEEP_PADDLE = "keep_paddle"                      # Paddle is closer to float64: keep its kernel, align behind a flag
    ALIGN_PADDLE = "align_paddle"                    # Torch is closer: align Paddle
    ALIGN_FOR_CONSISTENCY = "align_for_consistency"  # equally close: align for consistency
    NOT_READ = "not_read"                            # not exact, but no float64 reading says who is closer
    EXACT = "exact"                                  # every config exact: nothing to align


class Decision(StrEnum):
    """The maintainer's decision for one API x dtype (selectors.alignment.DECISIONS, from its Advice)."""
    KEEP_PADDLE = "keep_paddle"  # Paddle closer to float64, or already exact: keep Paddle's kernel
    ALIGN_TORCH = "align_torch"  # Torch closer, or both equally close: align Paddle to Torch
    UNDECIDED = "undecided"      # Paddle nondeterministic, or no float64 reading yet


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
