"""Start a re-test run: python manage.py retest [--task N ...|--api NAME|--all] --lane cpu [--wait]
[--paddle-flags FLAGS_use_accuracy_compatible_kernel=1]."""
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tracker.models import TestRun
from tracker.selectors.runs import run_summary
from tracker.services import cpu_evidence as cpu_evidence_service
from tracker.services import first_start
from tracker.tasks import follow_up_finished_run
from tracker.services import run_requests
from tracker.services import runs as run_service
from tracker.vocab import RunState, ScopeKind


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def progress_line(summary: dict, width: int = 30) -> str:
    total, done = summary["total"], summary["done"]
    filled = int(width * done / total) if total else 0
    text = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {summary['state']}"
    if summary.get("rate"):
        text += f"  {summary['rate']:.2f} configs/s"
    if summary.get("eta_seconds") is not None:
        text += f"  ETA {_minutes(summary['eta_seconds'])}"
        if summary.get("eta_range"):
            text += f" ({_minutes(summary['eta_range'][0])}–{_minutes(summary['eta_range'][1])})"
    if summary.get("waiting"):
        text += f"  ({summary['waiting']})"
    return text


class Command(BaseCommand):
    help = "Re-test the failing configs of tasks on the installed Paddle build (queued for qcluster)."

    def add_arguments(self, parser):
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--task", type=int, nargs="+", action="extend", metavar="N", help="task number(s)")
        scope.add_argument("--api", metavar="NAME", help="every task of this API (on the lane's kernel)")
        scope.add_argument("--all", action="store_true", help="every task not yet completed")
        scope.add_argument("--first-start", action="store_true",
                           help="on a board with no runs yet, queue a re-test of every CPU task on the main env "
                                "(scripts/run.sh does this unless AUTO_RETEST=0)")
        scope.add_argument("--resume", action="store_true",
                           help="put runs left running by a dead executor back on their queue")
        parser.add_argument("--lane", choices=TestRun.Lane.values, default=TestRun.Lane.CPU)
        parser.add_argument("--on-cpu", action="store_true",
                            help="GPU tasks (--task N ..., or --all for every GPU task) re-tested on the CPU lane: "
                                 "stored as the tasks' CPU evidence, never as a GPU verdict")
        parser.add_argument("--max-elements", type=int, metavar="N",
                            help="with --on-cpu: only the configs of at most N input elements (the run's scope "
                                 "says the bound; the task pages count what was re-tested of all)")
        parser.add_argument("--smallest", type=int, metavar="N",
                            help="with --on-cpu: only each task's N smallest configs (the first start's bounded share)")
        parser.add_argument("--release", metavar="X", default="",
                            help="the Paddle release a one-release run (--on-cpu, --torch, a task or API) runs on "
                                 "(default: the main environment)")
        parser.add_argument("--releases", metavar="all|X,Y",
                            help="one matrix run on several Paddle releases: 'all' (every release with an env "
                                 "here or on a worker) or a list like 3.0.0,3.3.1 (see manage.py paddle_envs)")
        parser.add_argument("--full", action="store_true",
                            help="with --releases: run every config on every release (regression hunting); by "
                                 "default the oldest and newest are run and the releases between are bisected "
                                 "only for configs whose verdicts there differ")
        parser.add_argument("--paddle-flags", metavar="FLAGS_NAME=VALUE[,...]", default="",
                            help="Paddle flags the run's workers run with, e.g. FLAGS_use_accuracy_compatible_kernel=1 "
                                 "(comma- or space-separated); refused before anything is queued when malformed or "
                                 "when the run's release does not define a flag")
        parser.add_argument("--readings", action="store_true",
                            help="also read, for every config that is not exact, run-to-run stability and who is "
                                 "closer to a float64 oracle (up to RUNNER_READINGS_PER_GROUP configs per API and "
                                 "dtypes); off by default, as they cost about three times the verdict")
        parser.add_argument("--threads", type=int, default=1, metavar="N",
                            help="pin Paddle and Torch to N threads in the run's workers (default 1: the exact rule "
                                 "is judged single-threaded, as Paddle's alignment work is); a verdict that changes "
                                 "with the thread count is shown as thread-sensitive")
        parser.add_argument("--torch", metavar="V", default="",
                            help="judge against Torch V instead of the project's own (e.g. 2.12.0, as PaddleAPITest "
                                 "pins): runs on a worker's env pairing the release with it (manage.py paddle_envs add "
                                 "X --torch V); its verdicts feed manage.py torch_drift, never the board's verdicts")
        parser.add_argument("--wait", action="store_true", help="show a progress bar until the run ends")
        parser.add_argument("--inline", action="store_true",
                            help="execute in this process instead of queueing for qcluster (implies --wait)")
        parser.add_argument("--run", type=int, metavar="ID", help="with --inline: execute/resume this existing run")
        parser.add_argument("--workers", type=int, help="worker processes for --inline (default RUNNER_WORKERS)")

    def handle(self, *args, **options):
        """The one-shot modes (--first-start, --resume, --run), else a new run of the scope asked for, then follow it
        as asked (--inline, --wait)."""
        existing = options["first_start"] or options["resume"] or options["run"]
        if options["paddle_flags"] and existing:
            raise CommandError("--paddle-flags sets a new run's flags: an existing run keeps the flags it was "
                               "queued with")
        if options["threads"] != 1 and existing:
            raise CommandError("--threads sets a new run's threads: an existing run keeps the threads it was queued "
                               "with")
        if options["readings"] and (options["first_start"] or options["resume"] or options["run"] or options["on_cpu"]):
            raise CommandError("--readings asks a new CPU-task run for the readings: an existing run keeps what it "
                               "was queued with, and CPU evidence of GPU tasks has no exact rule to read")
        if options["first_start"]:
            return self._first_start()
        if options["resume"]:
            return self._resume(options)
        if options["run"]:
            if not options["inline"]:
                raise CommandError("--run needs --inline")
            return self._inline(options["run"], options)
        if (options["max_elements"] is not None or options["smallest"] is not None) and not options["on_cpu"]:
            raise CommandError("--max-elements and --smallest bound an --on-cpu run (CPU evidence of GPU tasks)")
        if options["on_cpu"]:
            return self._on_cpu(options)
        run = self._create(options)
        if options["releases"]:
            return self._follow_matrix(run, options)
        flags = f", Paddle flags {run.paddle_flags_text}" if run.paddle_flags else ""
        readings = ", with the readings (stability, who is closer)" if run.readings else ""
        threads = f", {run.threads} threads" if run.threads != 1 else ""  # 1: the default, the line as it always was
        self.stdout.write(f"run {run.pk}: {run.total} configs, lane {run.lane}{flags}{readings}{threads}")
        self.stdout.flush()
        if options["inline"]:
            return self._inline(run.pk, options)
        if options["wait"]:
            self._wait(run.pk)

    def _first_start(self):
        """On a board with no run yet, queue the first start (services/first_start.py): every CPU task on the main
        env, then the GPU tasks' smallest configs on the CPU lane, each diagnosed when it ends (scripts/run.sh)."""
        if TestRun.objects.exists():
            self.stdout.write("first start: the board already has runs; nothing queued")
            return
        try:
            runs = first_start.start_first_start()
        except run_service.RunError as exc:
            self.stdout.write(f"first start: nothing queued ({exc})")
            return
        cpu_run, *evidence = runs
        self.stdout.write(f"first start: run {cpu_run.pk} queued: {cpu_run.total} configs of every CPU task on the "
                          "main env")
        for run in evidence:
            self.stdout.write(f"first start: run {run.pk} queued after it: {run.total} configs of "
                              f"{len(run.scope['tasks'])} GPU tasks on the CPU lane (the smallest "
                              f"{run.scope['per_task']} of each; CPU evidence, not a GPU verdict)")
        if settings.FIRST_START_DIAGNOSE_PER_TASK:
            self.stdout.write(f"first start: each run diagnoses up to {settings.FIRST_START_DIAGNOSE_PER_TASK} "
                              "strictly failing config(s) per task when it ends")

    def _resume(self, options):
        """Runs left running by a dead executor: back on their queue, or executed here with --inline."""
        resumed = run_service.resume_orphaned_runs(enqueue=not options["inline"])
        self.stdout.write(f"resumed runs: {resumed or 'none'}")
        for run_id in resumed if options["inline"] else []:
            self._inline(run_id, options)

    @staticmethod
    def _scope(options) -> tuple[str, dict]:
        """(scope kind, its arguments) from --task / --api / --all."""
        if options["task"]:
            return (ScopeKind.TASK if len(options["task"]) == 1 else ScopeKind.TASKS), {"tasks": options["task"]}
        if options["api"]:
            return ScopeKind.API, {"api": options["api"]}
        if options["all"]:
            return ScopeKind.ALL_OPEN, {}
        raise CommandError("say what to re-test: --task N [N ...], --api NAME or --all")

    def _request(self, options, **overrides) -> run_requests.RunRequest:
        """The run asked for, as services.run_requests takes it from the web views too."""
        return run_requests.RunRequest(
            paddle_flags=options["paddle_flags"], readings=options["readings"], requested_by="retest command",
            threads=options["threads"], torch=options["torch"],
            lane=options["lane"], **overrides)

    def _start(self, request: run_requests.RunRequest, options) -> TestRun:
        """Start it: the command line is its own confirmation; --inline creates it for this process to execute."""
        try:
            return run_requests.start_requested_run(request, confirmed=True, queue=not options["inline"])
        except run_service.RunError as exc:
            raise CommandError(str(exc))

    def _create(self, options) -> TestRun:
        """The new run: a release matrix with --releases; queued, or only created when --inline executes it here."""
        kind, kwargs = self._scope(options)
        try:
            releases = tuple(run_service.parse_releases(options["releases"])) if options["releases"] else ()
        except run_service.RunError as exc:
            raise CommandError(str(exc))
        mode = run_service.FULL if options["full"] else run_service.BISECT
        return self._start(self._request(options, kind=kind, tasks=tuple(kwargs.get("tasks") or ()),
                                         api=kwargs.get("api"), releases=releases, mode=mode,
                                         release="" if releases else options["release"]), options)

    def _follow_matrix(self, run: TestRun, options):
        """A matrix run's lanes; with --inline each is executed here, with --wait the progress is shown."""
        lanes = list(run.lanes.order_by("id"))
        self.stdout.write(f"run {run.pk}: {run.total} configs on {len(lanes)} releases "
                          f"({', '.join(f'{c.release}: run {c.pk}' for c in lanes)}), lane {run.lane}")
        self.stdout.flush()
        if options["inline"]:
            # A bisecting matrix adds probe lanes as earlier ones end: run queued lanes until none is left.
            done: set[int] = set()
            while pending := [c for c in run.lanes.order_by("id") if c.pk not in done and c.state == RunState.QUEUED]:
                for child in pending:
                    done.add(child.pk)
                    self._inline(child.pk, options)
            run.refresh_from_db()
            self.stdout.write(f"run {run.pk} {run.state}: {progress_line(run_summary(run))}")
            return
        if options["wait"]:
            self._wait(run.pk)

    def _on_cpu(self, options):
        if options["api"] or options["releases"] or options["lane"] != TestRun.Lane.CPU:
            raise CommandError("--on-cpu takes --task N [N ...] or --all (every GPU task), on the cpu lane, one release")
        if not (options["task"] or options["all"]):
            raise CommandError("say which GPU tasks to re-test on the CPU lane: --task N [N ...] or --all")
        numbers = options["task"] or cpu_evidence_service.all_gpu_task_numbers()
        bound, smallest = options["max_elements"], options["smallest"]
        run = self._start(self._request(options, on_cpu=True, tasks=tuple(numbers), release=options["release"],
                                        max_elements=bound, smallest=smallest), options)
        within = ((f" (each task's {smallest} smallest configs)" if smallest is not None else "")
                  + (f" (the configs of at most {bound} input elements)" if bound is not None else ""))
        self.stdout.write(f"run {run.pk}: {run.total} configs of {len(run.scope['tasks'])} GPU tasks on the cpu lane"
                          f"{within} (CPU evidence, not a GPU verdict)")
        self.stdout.flush()
        if options["inline"]:
            return self._inline(run.pk, options)
        if options["wait"]:
            self._wait(run.pk)

    def _inline(self, run_id, options):
        if not TestRun.objects.filter(pk=run_id).exists():  # (an id past the column's range matches nothing)
            raise CommandError(f"no run {run_id}")
        report = run_service.execute_run(run_id, workers=options.get("workers"))
        if report.finished_here:
            follow_up_finished_run(run_id)
        summary = run_summary(TestRun.objects.get(pk=run_id))
        self.stdout.write(progress_line(summary))
        self.stdout.write(f"run {run_id} {report.state}: executed {report.executed} configs here "
                          f"({report.skipped_existing} already had results); counts {summary['counts']}")

    def _wait(self, run_id):
        tty = sys.stdout.isatty()
        last = ""
        while True:
            run = TestRun.objects.get(pk=run_id)
            line = progress_line(run_summary(run))
            if line != last:
                self.stdout.write(("\r" + line) if tty else line, ending="" if tty else "\n")
                self.stdout.flush()
                last = line
            if run.state not in (TestRun.State.QUEUED, TestRun.State.RUNNING):
                self.stdout.write("")
                self.stdout.write(f"run {run_id} {run.state}: counts {run_summary(run)['counts']}")
                return
            time.sleep(1.0)
