"""The board's data model.

A Task is one API×kernel row of the tracking issue. People claim tasks (Claim) and link pull requests
(PullRequest); PaddleAPITest's reports give each task its failing configs (FailingConfig); re-test runs
(TestRun) store one ConfigResult per config. Every change is written as an Event with its source so a
task's history can be audited.
"""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from apitester.paddle_flags import format_flags

from .vocab import ACTIVE_RUN_STATES, Kernel, Lane, RunState, Status, WaitingReason, rule_of


class TaskStatus(models.TextChoices):
    OPEN = "open", _("open")
    CLAIMED = "claimed", _("claimed")
    PR_SUBMITTED = "pr_submitted", _("PR submitted")
    COMPLETED = "completed", _("completed")
    LOCKED = "locked", _("locked")


class ClaimStatus(models.TextChoices):
    """A person's status on a task, as the community bot's badges name it (ordered by progress)."""

    CLAIMED = "报名", _("claimed")
    RFC = "提交RFC", _("RFC submitted")
    DESIGN_DOC = "完成设计文档", _("design doc done")
    PR_SUBMITTED = "提交PR", _("PR submitted")
    PARTIAL = "部分完成", _("partially completed")
    COMPLETED = "完成任务", _("completed")


# Progress order: a person's status never moves backwards because events arrive out of order.
CLAIM_STATUS_RANK = {status.value: rank for rank, status in enumerate(ClaimStatus)}


class Source(models.TextChoices):
    SEED = "seed", _("board import")
    IMPORT = "import", _("report import")
    COMMENT = "comment", _("issue comment")
    PR = "pr", _("pull request")
    WEB = "web", _("web user")
    RUN = "run", _("re-test run")
    DIAGNOSIS = "diagnosis", _("diagnosis")
    ADMIN = "admin", _("admin")


# Sources that carry no date of their own: a claim or PR link imported from the tracking issue's text was made
# some time before the import, which is all the text says. Such a row's `created` holds the import time (an upper
# bound); pages show it as "before import" and the dated series (the burn-down, lead times) leave it out.
UNDATED_SOURCES = frozenset({Source.SEED.value})


class Contributor(models.Model):
    login = models.CharField(max_length=100, unique=True)
    # The site account that speaks for this GitHub login (set on the profile) — may be empty.
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="contributor"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["login"]

    def __str__(self):
        return self.login


class Task(models.Model):
    number = models.PositiveIntegerField(unique=True)
    api = models.CharField(max_length=200, db_index=True)
    kernel = models.CharField(max_length=3, choices=Kernel.choices)
    # Non-empty means the task is not claimable (e.g. "output dtype类型不同，暂不要报名").
    locked_reason = models.CharField(max_length=300, blank=True, default="")
    # Denormalised from claims and PRs by tracker.services so the board can filter and sort in SQL.
    status = models.CharField(max_length=20, choices=TaskStatus.choices, default=TaskStatus.OPEN, db_index=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["number"]

    def __str__(self):
        return f"No.{self.number} {self.api} {self.kernel}"

    @property
    def locked(self) -> bool:
        return bool(self.locked_reason)

    @property
    def lane(self) -> Lane:
        """The runner lane that re-tests this task: its kernel's (a CPU task on the cpu lane)."""
        return Kernel(self.kernel).lane


class Claim(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="claims")
    contributor = models.ForeignKey(Contributor, on_delete=models.CASCADE, related_name="claims")
    status = models.CharField(max_length=20, choices=ClaimStatus.choices, default=ClaimStatus.CLAIMED)
    source = models.CharField(max_length=20, choices=Source.choices)
    # Where the claim came from: a comment URL, a delivery id, a file:line of an import, a user name.
    source_ref = models.CharField(max_length=500, blank=True, default="")
    created = models.DateTimeField()
    updated = models.DateTimeField(auto_now=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # Who withdrew it (a Source): a board re-import may only undo withdrawals a board import made.
    withdrawn_source = models.CharField(max_length=20, choices=Source.choices, blank=True, default="")

    class Meta:
        ordering = ["task__number", "created", "id"]
        constraints = [models.UniqueConstraint(fields=["task", "contributor"], name="one_claim_per_person_and_task")]

    def __str__(self):
        return f"{self.contributor} → No.{self.task.number} ({self.status})"

    @property
    def active(self) -> bool:
        return self.withdrawn_at is None


class PullRequest(models.Model):
    class State(models.TextChoices):
        OPEN = "open", _("open")
        CLOSED = "closed", _("closed")
        MERGED = "merged", _("merged")
        UNKNOWN = "unknown", _("unknown")

    repo = models.CharField(max_length=200)  # owner/name
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500, blank=True, default="")
    author = models.ForeignKey(Contributor, null=True, blank=True, on_delete=models.SET_NULL, related_name="pull_requests")
    state = models.CharField(max_length=10, choices=State.choices, default=State.UNKNOWN)
    part = models.BooleanField(default=False)  # "-part" in the title: partial completion
    created_at = models.DateTimeField(null=True, blank=True)
    merged_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # GitHub's updated_at of the newest event applied; older events never overwrite newer state.
    github_updated_at = models.DateTimeField(null=True, blank=True)
    tasks = models.ManyToManyField(Task, related_name="pull_requests", blank=True)

    class Meta:
        ordering = ["repo", "number"]
        constraints = [models.UniqueConstraint(fields=["repo", "number"], name="unique_pr_per_repo")]

    def __str__(self):
        return f"{self.repo}#{self.number}"

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}/pull/{self.number}"


class FailingConfig(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="failing_configs")
    config = models.TextField()
    # Hash of `config` so (task, config) can be unique on every database (TextField can't be indexed on all).
    config_hash = models.CharField(max_length=64)
    # Newest report file the config appears in (relative to the reports dir), its date and category
    # (e.g. "accuracy", "amp", "dtype_diff", "grads_diff", "uncertain").
    origin_file = models.CharField(max_length=300)
    origin_date = models.DateField(null=True, blank=True)
    category = models.CharField(max_length=50, blank=True, default="")
    # Every report file that lists the config: [{"file", "date", "category"}, ...]
    origins = models.JSONField(default=list)
    # From history/: first and last version of error_config.txt that listed it.
    first_seen = models.DateField(null=True, blank=True)
    last_seen = models.DateField(null=True, blank=True)
    # False when the config has vanished from the newest report ("gone from the report on DATE").
    in_latest_report = models.BooleanField(default=True)
    gone_since = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["task__number", "id"]
        constraints = [models.UniqueConstraint(fields=["task", "config_hash"], name="unique_config_per_task")]

    def __str__(self):
        return self.config[:120]


class Event(models.Model):
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=50, db_index=True)  # e.g. task_created, claimed, withdrawn, pr_linked, pr_state, verified
    source = models.CharField(max_length=20, choices=Source.choices)
    source_ref = models.CharField(max_length=500, blank=True, default="")  # comment URL, delivery id, PR URL, run id, user
    actor = models.CharField(max_length=100, blank=True, default="")
    message = models.TextField(blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return f"{self.created:%Y-%m-%d} {self.kind} {self.message[:60]}"


class TestRun(models.Model):
    __test__ = False  # not a pytest test class

    Lane = Lane  # both in tracker/vocab.py
    State = RunState

    # {"kind": a ScopeKind (tracker/vocab.py), "tasks": [numbers], "api": name}
    scope = models.JSONField(default=dict)
    lane = models.CharField(max_length=3, choices=Lane.choices, default=Lane.CPU)
    # The Paddle release the run must be executed on ("" = the main environment's, whatever it is). Only
    # a worker whose Paddle reports exactly this version stores verdicts for it.
    release = models.CharField(max_length=50, blank=True, default="", db_index=True)
    # A matrix run (one scope on several releases) is a parent with one child run per release; the
    # parent is never executed itself, its progress is its children's.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="lanes")
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED, db_index=True)
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    paddle_commit = models.CharField(max_length=64, blank=True, default="")
    torch_version = models.CharField(max_length=50, blank=True, default="")
    host = models.CharField(max_length=200, blank=True, default="")
    requested_by = models.CharField(max_length=150, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True, default="")
    # Who is executing the run ("host:pid") and when it last reported: a running run whose executor
    # died (kill -9, lost host) is found by these and resumed where it stopped.
    executor = models.CharField(max_length=200, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Times the stale sweep put the run back on its queue since it last stored a verdict; past
    # RUNNER_MAX_REQUEUES the sweep ends it `failed` (something in the runner stops it every time).
    requeues = models.PositiveIntegerField(default=0)
    # When the run's job was last put on its lane's queue while the run was queued (services.queue.enqueue_run):
    # a queued run nobody took off the queue for RUNNER_QUEUED_RESEND_SECONDS since then is sent again.
    sent_at = models.DateTimeField(null=True, blank=True)
    # What the run waits for (a WaitingReason; "" for nothing in particular), set with the message that says it in
    # words: the sweeps query this, never the message's text.
    waiting = models.CharField(max_length=20, choices=WaitingReason.choices, blank=True, default=WaitingReason.NONE)
    # The Paddle flags the run's workers run with ({"FLAGS_use_accuracy_compatible_kernel": "1"}; {} for none),
    # checked against the release's Paddle before the run was queued (apitester.paddle_flags): every verdict of the
    # run was given with them (store_result refuses one whose worker read other values).
    paddle_flags = models.JSONField(default=dict, blank=True)
    # The run asked for the readings of every config that is not exact (the stability re-run and who is closer to a
    # float64 oracle: `retest --readings`, the alignment page's button). Off by default: a verdict then costs what it
    # did before the readings existed (issue #43); its inexact verdicts say the readings were not asked for.
    readings = models.BooleanField(default=False)
    # The threads both frameworks are pinned to in the run's workers (retest --threads N; 1 by default: the exact
    # rule is judged single-threaded, as Paddle's alignment work is). None: a run stored before runs pinned them
    # (its workers had the host's cores ÷ workers; each result's provenance says what they were).
    threads = models.PositiveSmallIntegerField(null=True, blank=True, default=1)
    # The Torch the run judges against when not the project's own ("": the main env's pin; "2.12.0": a worker's env
    # pairing the release with that Torch, paddle_envs add X --torch 2.12.0). Such a run measures the reference's
    # drift (manage.py torch_drift); the board's verdicts and the release axis read only runs with "" here.
    torch = models.CharField(max_length=20, blank=True, default="")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return f"run {self.pk} ({self.lane}, {self.state})"

    @property
    def scope_tasks(self) -> list[int]:
        """The task numbers the scope names, for pages that list a task's runs. A scope edited in the admin
        may hold anything JSON does ({"tasks": "1"}, 7, nesting): what isn't a list of numbers names no task."""
        tasks = self.scope.get("tasks") if isinstance(self.scope, dict) else None
        if not isinstance(tasks, list):
            return []
        # (a number no task column can hold names no task either: a query with it would overflow SQLite)
        return [n for n in tasks if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 2**31]

    @property
    def paddle_flags_text(self) -> str:
        """The flags as one line (``FLAGS_a=1 FLAGS_b=0``; "" for none), for pages."""
        return format_flags(self.paddle_flags if isinstance(self.paddle_flags, dict) else {})

    @property
    def is_active(self) -> bool:
        """Still has work to do: queued or running (pages poll its progress while it is)."""
        return self.state in ACTIVE_RUN_STATES

    @property
    def has_failed(self) -> bool:
        return self.state == RunState.FAILED


class RunShard(models.Model):
    """A slice of a run's configs that one executor leases at a time, so several hosts share one run.

    Created in the run's dispatch order (services/shards.py): shard 0 opens with each task's smallest
    config. An executor takes a queued shard with an atomic UPDATE, renews `lease_expires` while it works
    (heartbeat) and marks it done; a lease that lapses (its owner killed) is taken over or re-queued, and the
    configs already holding a ConfigResult are skipped, so nothing runs twice.
    """

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        LEASED = "leased", "leased"
        DONE = "done", "done"

    run = models.ForeignKey(TestRun, on_delete=models.CASCADE, related_name="shards")
    index = models.PositiveIntegerField()
    config_ids = models.JSONField(default=list)  # FailingConfig ids, in dispatch order
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    # The executor ("host:pid") holding the lease and until when; `done_by` keeps who finished it.
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires = models.DateTimeField(null=True, blank=True)
    done_by = models.CharField(max_length=200, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)  # leases taken, a take-over included

    class Meta:
        ordering = ["run_id", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_shard_per_run_and_index")]
        indexes = [models.Index(fields=["run", "state"], name="shard_run_state")]

    def __str__(self):
        return f"run {self.run_id} shard {self.index} ({self.state})"


class Provenance(models.Model):
    """Under which conditions verdicts were given (apitester.provenance, issue #46): one row per distinct
    provenance a worker reported, shared by every ConfigResult it gave (a run stores a handful, not one per result)."""

    fingerprint = models.CharField(max_length=64, unique=True)  # apitester.provenance.fingerprint of the dict
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    paddle_commit = models.CharField(max_length=64, blank=True, default="")
    torch_version = models.CharField(max_length=50, blank=True, default="")
    numpy_version = models.CharField(max_length=50, blank=True, default="")
    # The thread count both frameworks used (Torch's get_num_threads; None: not reported) and the full reading.
    threads = models.PositiveSmallIntegerField(null=True, blank=True)
    thread_detail = models.JSONField(default=dict, blank=True)
    # The instruction-set level each framework dispatches to, the CPU's AVX flags and model.
    cpu_capability = models.JSONField(default=dict, blank=True)
    host = models.CharField(max_length=200, blank=True, default="")  # shown to staff only (selectors.visibility)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"Paddle {self.paddle_version} / Torch {self.torch_version}, {self.threads} thread(s)"


class ConfigResult(models.Model):
    run = models.ForeignKey(TestRun, on_delete=models.CASCADE, related_name="results")
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="results")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="config_results")
    status = models.CharField(max_length=30, db_index=True)
    direction = models.CharField(max_length=10, blank=True, default="")  # forward | backward
    statistical = models.BooleanField(default=False)
    max_abs = models.FloatField(null=True, blank=True)
    max_rel = models.FloatField(null=True, blank=True)
    mismatched = models.BigIntegerField(null=True, blank=True)
    total_elements = models.BigIntegerField(null=True, blank=True)
    worst_index = models.JSONField(null=True, blank=True)
    message = models.TextField(blank=True, default="")
    seconds = models.FloatField(default=0.0)
    # Of ``seconds``: the time inside Paddle's and Torch's own calls (the engine's overhead is the rest).
    framework_seconds = models.FloatField(default=0.0)
    # Where the verdict's seconds went (apitester.engine.phases: draws, convert, paddle, torch, backward, compare, exact,
    # torch_cache, readings, other) and what the Torch result cache did ({"hit": n, ...}; {} when it was off).
    phases = models.JSONField(default=dict, blank=True)
    torch_cache = models.JSONField(default=dict, blank=True)
    diff_map = models.JSONField(null=True, blank=True)
    # The build that produced this verdict, as the worker reported it (paddle.version.full_version / commit).
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    paddle_commit = models.CharField(max_length=64, blank=True, default="")
    torch_version = models.CharField(max_length=50, blank=True, default="")
    # The verdict's two layers (docs/verdicts.md).  `status` above is the final status; the strict
    # layer is Paddle vs the plain Torch call ("fix verified" reads it); the adapted layer exists
    # only where the spec declares a result-changing adaptation (`adaptations`: [{kind, reason, link}]).
    # The top-level figures (max_abs, max_rel, mismatched, diff_map) are the strict layer's.
    strict_status = models.CharField(max_length=30, blank=True, default="")
    strict_direction = models.CharField(max_length=10, blank=True, default="")
    adapted_status = models.CharField(max_length=30, blank=True, default="")
    adapted_direction = models.CharField(max_length=10, blank=True, default="")
    adapted_max_abs = models.FloatField(null=True, blank=True)
    adapted_max_rel = models.FloatField(null=True, blank=True)
    adapted_mismatched = models.BigIntegerField(null=True, blank=True)
    adapted_message = models.TextField(blank=True, default="")
    adaptations = models.JSONField(default=list, blank=True)
    evidence = models.TextField(blank=True, default="")  # why the engine suspects Torch (torch_suspect)
    # The final status the runner's engine gave, kept while a diagnosis overrides it (a strict failure the
    # float64 oracle reads torch_off becomes torch_suspect; services.diagnoses.apply_implied_verdict), so a
    # later diagnosis with another reading restores it.  "" when no diagnosis overrides the status.
    engine_status = models.CharField(max_length=30, blank=True, default="")
    # The input draw the verdict comes from ("edge:0@2", with its draw format; "" for a pool-made verdict or
    # format 1's typical draw), so the repro command replays exactly those inputs (apitester --draw).
    draw = models.CharField(max_length=40, blank=True, default="")
    # What the spec says about this verdict (docs/verdicts.md): the declared known Paddle failure it matches
    # ({status, direction, releases, dtypes, contains, reason, source}; it never excuses the failure) and
    # what the spec compares where it departs from the default tolerance ({note, source}).
    known_failure = models.JSONField(null=True, blank=True)
    comparison = models.JSONField(null=True, blank=True)
    # The exact rule (docs/verdicts.md#the-exact-rule), the strict layer's: every compared value equal (None: no
    # value comparison) and the largest distance in units in the last place (capped at the column's maximum).
    exact = models.BooleanField(null=True, blank=True)
    max_ulp = models.BigIntegerField(null=True, blank=True)
    # Readings of a config that is not exact (docs/verdicts.md#stability-and-who-is-closer): the inexact draw run
    # twice gave each side the same bits (None: not read); the side whose bits changed (apitester.vocab.Side);
    # the float64 oracle's reading of the worst output (apitester.vocab.Reading, "" = none) with its NoOracle
    # code, that output, each side's RMSE to the rounded oracle, and why no reading was taken (the input bound).
    stable = models.BooleanField(null=True, blank=True)
    nondeterministic = models.CharField(max_length=10, blank=True, default="")
    closer = models.CharField(max_length=20, blank=True, default="", db_index=True)
    closer_code = models.CharField(max_length=20, blank=True, default="")
    closer_output = models.CharField(max_length=60, blank=True, default="")
    closer_skipped = models.CharField(max_length=300, blank=True, default="")
    paddle_rmse = models.FloatField(null=True, blank=True)
    torch_rmse = models.FloatField(null=True, blank=True)
    # The worker's provenance (builds, threads, CPU capability, host); None for a result stored before it existed.
    provenance = models.ForeignKey(Provenance, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    created = models.DateTimeField(auto_now_add=True)

    @property
    def layers_differ(self) -> bool:
        """The adapted layer exists and says something other than the strict one."""
        return bool(self.adapted_status) and (self.adapted_status != (self.strict_status or self.status)
                                              or self.status != (self.strict_status or self.status))

    @property
    def final_differs(self) -> bool:
        """No adapted layer, yet the final status is not the strict one (a diagnosis' torch_suspect)."""
        return not self.layers_differ and self.status != (self.strict_status or self.status)

    @property
    def strict(self) -> str:
        """The strict layer's status (rows stored before the layers existed: the status itself)."""
        return self.strict_status or self.status

    @property
    def rule(self) -> str | None:
        """The strict layer under the exact rule: exact / within_tolerance / fails (None: no verdict or no reading)."""
        return rule_of(self.strict, self.exact)

    @property
    def is_unsupported(self) -> bool:
        """The engine can't run this config (an engine gap, not a Paddle bug): the rows say so."""
        return self.status == Status.UNSUPPORTED

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [
            # Config first: the regression scan reads each config's verdicts in run order off this index.
            models.UniqueConstraint(fields=["failing_config", "run"], name="one_result_per_config_and_run")
        ]
        indexes = [models.Index(fields=["task", "run"], name="result_task_run")]

    def __str__(self):
        return f"run {self.run_id} cfg {self.failing_config_id}: {self.status}"


class LatestResult(models.Model):
    """A config's newest verdict per (task it was judged under, lane, its run's release, Paddle version): the row
    the "latest" readers (selectors.runs.latest_results, selectors.releases.release_grids, the board's verifications)
    read instead of scanning every result (a year of weekly runs holds ~400 per config, issue #45). Newest = the
    highest run id, as those readers always chose. Written by services.latest in the transaction that stores the
    verdict (services.runs.store_result); a bulk write or a deletion fills the rows again (services.latest.rebuild)."""
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")  # the result's task
    lane = models.CharField(max_length=3)  # the run's
    release = models.CharField(max_length=50, blank=True, default="")  # the run's ("" = the main environment's)
    version = models.CharField(max_length=50, blank=True, default="")  # the result's Paddle version, else its run's
    run = models.ForeignKey(TestRun, on_delete=models.CASCADE, related_name="+")
    result = models.OneToOneField(ConfigResult, on_delete=models.CASCADE, related_name="+")
    # the result's, copied: the board-wide grid reads these rows alone (joined, PostgreSQL scanned every result);
    # a diagnosis that changes the result's status changes it here too (services.latest.restatus)
    status = models.CharField(max_length=30)
    exact = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["failing_config", "task", "lane", "release", "version"],
                                               name="one_latest_per_config_key")]
        indexes = [models.Index(fields=["task", "lane"], name="latest_task_lane")]

    def __str__(self):
        return f"cfg {self.failing_config_id} {self.lane} {self.release or 'main'} {self.version}: run {self.run_id}"


class ResultCount(models.Model):
    """How many results a config has per (task, lane, its run's release and build, status): what flakiness reads
    (selectors.flakiness) instead of grouping every result (8 s for /api/flaky on a year-old board, issue #45).
    Written with LatestResult by services.latest: counted in the transaction that stores the verdict, moved by a
    diagnosis that changes a result's status, counted again from the results after a bulk write or a deletion.
    Runs judged against another Torch (``TestRun.torch``) are not counted, as flakiness never read them."""
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")  # the result's task
    lane = models.CharField(max_length=3)  # the run's
    release = models.CharField(max_length=50, blank=True, default="")  # the run's ("" = the main environment's)
    version = models.CharField(max_length=50, blank=True, default="")  # the run's Paddle version
    commit = models.CharField(max_length=64, blank=True, default="")  # and commit: one build
    status = models.CharField(max_length=30)
    n = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["failing_config", "task", "lane", "release", "version",
                                                       "commit", "status"], name="one_count_per_config_build_status")]
        indexes = [models.Index(fields=["task", "lane"], name="count_task_lane")]

    def __str__(self):
        return f"cfg {self.failing_config_id} {self.lane} {self.version}@{self.commit[:8]} {self.status}: {self.n}"


class WebhookDelivery(models.Model):
    """One GitHub webhook delivery, kept so a redelivered X-GitHub-Delivery is applied only once."""

    delivery_id = models.CharField(max_length=100, unique=True)
    event = models.CharField(max_length=50)
    action = models.CharField(max_length=50, blank=True, default="")
    received = models.DateTimeField(auto_now_add=True)
    outcome = models.CharField(max_length=200, blank=True, default="")

    def __str__(self):
        return f"{self.event}/{self.action} {self.delivery_id}"


class SyncCursor(models.Model):
    """Poller state per GitHub resource: the `since` timestamp and the ETag of the last response."""

    key = models.CharField(max_length=300, unique=True)
    since = models.DateTimeField(null=True, blank=True)
    etag = models.CharField(max_length=200, blank=True, default="")
    updated = models.DateTimeField(auto_now=True)


class IssueComment(models.Model):
    """A tracking-issue comment as last seen, so an edit or deletion can withdraw claims it no longer makes."""

    comment_id = models.BigIntegerField(unique=True)
    author = models.CharField(max_length=100)
    # The login a comment of the site's own account speaks for (`【报名】: 21 (for @login)`); "" otherwise.
    on_behalf_of = models.CharField(max_length=100, blank=True, default="")
    url = models.CharField(max_length=500, blank=True, default="")
    body = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    # Task numbers this comment currently claims, and the parse errors it produced.
    claimed = models.JSONField(default=list)
    errors = models.JSONField(default=list)


class WorkerHeartbeat(models.Model):
    """A qcluster worker host advertising which lanes it can run (gpu only with a CUDA Paddle build)."""

    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200)
    lanes = models.JSONField(default=list)  # ["cpu"] or ["cpu", "gpu"]
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    # Every Paddle release this worker can run (its main env's and each installed paddle env's).
    releases = models.JSONField(default=list)
    last_seen = models.DateTimeField()


class Diagnosis(models.Model):
    """One strictly failing config diagnosed by the engine (apitester.diagnosis.diagnose, docs/diagnosis.md): which
    side is off a float64 oracle, the smallest input that shows the same failure, and its repro script.

    Written by services/diagnoses.py from the engine's JSON (kept whole in `data`); the columns are what the
    pages group and filter by. Configs with the same `signature` are one distinct failure of the task.
    """

    class State(models.TextChoices):
        DONE = "done", _("diagnosed")
        ERROR = "error", _("could not be diagnosed")

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="diagnoses")
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="diagnoses")
    # The stored verdict this diagnosis explains (its draw is the one re-drawn); kept when the run goes.
    result = models.ForeignKey(ConfigResult, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.DONE)
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    torch_version = models.CharField(max_length=50, blank=True, default="")
    status = models.CharField(max_length=30, blank=True, default="")  # the failure's strict status
    direction = models.CharField(max_length=10, blank=True, default="")
    reading = models.CharField(max_length=30, blank=True, default="", db_index=True)  # apitester.vocab.Reading
    signature = models.CharField(max_length=64, blank=True, default="", db_index=True)
    shrunk_config = models.TextField(blank=True, default="")
    elements_before = models.BigIntegerField(null=True, blank=True)
    elements_after = models.BigIntegerField(null=True, blank=True)
    trials = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    repro = models.TextField(blank=True, default="")  # a self-contained script: inputs, both calls, the assert
    command = models.TextField(blank=True, default="")  # how to re-run the shrunk config with the engine
    message = models.TextField(blank=True, default="")  # why a diagnosis failed (state=error)
    data = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["task", "signature"])]


class ReportedDiff(models.Model):
    """What PaddleAPITest's own log says about one failing config in one report (read from its
    error_log.log by apitester.reports.report_logs): the report's evidence, shown beside — never as — our verdicts."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reported_diffs")
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="reported_diffs")
    log_file = models.CharField(max_length=300)  # relative to the reports dir
    log_line = models.PositiveIntegerField()  # the block's result line
    report_date = models.DateField(null=True, blank=True)
    device = models.CharField(max_length=3, choices=Kernel.choices)  # the kernel the report tested
    category = models.CharField(max_length=50, blank=True, default="")
    kind = models.CharField(max_length=30)  # apitester.reports.report_logs.Kind
    direction = models.CharField(max_length=10, blank=True, default="")  # forward | backward | "" (log does not say)
    mismatched = models.BigIntegerField(null=True, blank=True)
    total = models.BigIntegerField(null=True, blank=True)
    max_abs = models.FloatField(null=True, blank=True)  # inf as the report printed; its nan is stored as None
    max_rel = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-report_date", "log_file", "log_line"]
        constraints = [models.UniqueConstraint(fields=["failing_config", "log_file", "log_line"], name="unique_reported_diff")]
        indexes = [models.Index(fields=["task", "report_date"])]

    def __str__(self):
        return f"{self.device} {self.report_date} {self.kind} {self.failing_config_id}"


class ExternalRun(models.Model):
    """One PaddleAPITest run directory imported (`import_reports DIR --kernel cpu|gpu`): where it ran and by
    which rule it compared — the label every one of its results carries. Its outcomes are PaddleAPITest's,
    stored apart from this board's runs (TestRun/ConfigResult) and never counted as their verdicts."""

    source = models.CharField(max_length=500)  # the directory as given to the command
    fingerprint = models.CharField(max_length=64, unique=True)  # sha256 of the class files read: same run, same row
    kernel = models.CharField(max_length=3, choices=Kernel.choices)  # the tasks its configs were attached to
    device = models.CharField(max_length=100)  # what the run's log says it ran on ("GPU 0, 1", "CPU"), else the kernel
    run_date = models.DateField(null=True, blank=True)
    date_from = models.CharField(max_length=20, blank=True, default="")  # "log" | "files" (the class files' times)
    paddle_version = models.CharField(max_length=50, blank=True, default="")
    tolerance = models.CharField(max_length=200, blank=True, default="")  # e.g. "atol=0.01, rtol=0.01"; "" = not stated
    vocabulary = models.CharField(max_length=10)  # 2025 | 2026 | mixed | unknown
    per_class = models.JSONField(default=dict)  # class → {lines, found, final}
    summary = models.JSONField(default=dict)  # checkpointed, unclassified, in two classes, files not read, log cases
    imported_at = models.DateTimeField()

    class Meta:
        ordering = ["-run_date", "-imported_at"]

    def __str__(self):
        return f"PaddleAPITest {self.device} {self.run_date} ({self.source})"


class ExternalResult(models.Model):
    """PaddleAPITest's own outcome for one config of a task in one imported run: its final result class (2026
    name), every class the run put the config in, and what its log said. Shown labelled as PaddleAPITest's."""

    run = models.ForeignKey(ExternalRun, on_delete=models.CASCADE, related_name="results")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="external_results")
    failing_config = models.ForeignKey(FailingConfig, on_delete=models.CASCADE, related_name="external_results")
    result_class = models.CharField(max_length=30, db_index=True)  # apitester.reports.run_dirs.CLASS_PRECEDENCE
    written_class = models.CharField(max_length=30)  # as the run's file named it (2025 or 2026 vocabulary)
    classes = models.JSONField(default=list)  # every class the run put it in, final first
    class_file = models.CharField(max_length=300)
    class_line = models.PositiveIntegerField()
    log_outcome = models.CharField(max_length=20, blank=True, default="")  # the case end marker's PASS/FAIL/…
    log_line = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-run__run_date", "failing_config_id"]
        constraints = [models.UniqueConstraint(fields=["run", "failing_config"], name="unique_external_result")]

    def __str__(self):
        return f"{self.result_class} {self.failing_config_id} (PaddleAPITest run {self.run_id})"
