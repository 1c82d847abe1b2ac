"""`python manage.py import_reports [DIR]` — attach PaddleAPITest's failing configs to the board's tasks, then
store what the reports' logs say about each of them (`--no-logs` skips the logs, `--logs-only` reads only them).

`import_reports DIR --kernel cpu|gpu` with DIR a PaddleAPITest run directory (its `api_config_<class>.txt`
files, 2025 or 2026 class names): its failing configs become the kernel's tasks' configs and its own outcome per
config is stored as PaddleAPITest's result (`tracker.services.external_runs`); all or nothing."""
from django.core.management.base import BaseCommand, CommandError

from apitester.reports.run_dirs import is_run_dir
from tracker.selectors.reported import reports_root
from tracker.services.external_runs import RunDirRefused, import_run_dir
from tracker.services.report_import import import_reports
from tracker.services.reported_diffs import import_reported_diffs


class Command(BaseCommand):
    help = "Attach PaddleAPITest's failing configs (reports + history) to the board's tasks, and their logs' diffs."

    def add_arguments(self, parser):
        parser.add_argument("dir", nargs="?", default=None,
                            help="reports directory (default: env PADDLEAPITEST_REPORTS, else the engine's default)")
        logs = parser.add_mutually_exclusive_group()
        logs.add_argument("--no-logs", action="store_true", help="do not read the error_log.log files")
        logs.add_argument("--logs-only", action="store_true",
                          help="only read the error_log.log files (the reported diffs of configs already imported)")
        parser.add_argument("--kernel", choices=["cpu", "gpu"], default=None,
                            help="DIR is a PaddleAPITest run directory: attach its configs to the tasks of this kernel")

    def handle(self, *args, dir=None, no_logs=False, logs_only=False, kernel=None, **options):
        root = dir or reports_root()
        if kernel or (dir and is_run_dir(dir)):
            return self._run_dir(dir, kernel, no_logs or logs_only)
        try:
            if not logs_only:
                self._report_configs(import_reports(root))
            if not no_logs:
                self._reported_diffs(import_reported_diffs(root))
        except (FileNotFoundError, UnicodeDecodeError) as exc:
            raise CommandError(str(exc)) from exc

    def _report_configs(self, result):
        out = self.stdout.write
        for line in result.malformed:
            self.stderr.write(f"skipped malformed line: {line}")
        out(f"{result.files} report files, {result.configs_read} distinct configs; {result.attached} attached to tasks "
            f"({result.created} added, {result.updated} updated, {result.unchanged} unchanged) in {result.seconds:.1f} s")
        out(f"{result.without_task_configs} configs of {len(result.without_task)} APIs without a task on the board:")
        for (kernel, api), count in sorted(result.without_task.items()):
            out(f"  {kernel} {api}: {count}")
        out(f"{len(result.tasks_without_configs)} tasks without any failing config:")
        for task in result.tasks_without_configs:
            out(f"  No.{task.number} {task.api} {task.kernel}")

    def _reported_diffs(self, result):
        for line in result.unparseable:
            self.stderr.write(f"unparseable log block (nothing stored changed): {line}")
        self.stdout.write(
            f"{result.logs} logs, {result.blocks} result blocks ({len(result.unparseable)} unparseable, "
            f"{result.without_config} of a config no task holds); reported diffs: {result.created} added, "
            f"{result.updated} updated, {result.deleted} removed, {result.unchanged} unchanged in {result.seconds:.1f} s")

    def _run_dir(self, root, kernel, log_options):
        if not root or not kernel or log_options:
            raise CommandError("a PaddleAPITest run directory is imported as `import_reports DIR --kernel cpu|gpu` "
                               "(its log is always read; --no-logs / --logs-only belong to the report layout)")
        try:
            result = import_run_dir(root, kernel)
        except RunDirRefused as exc:
            for line in exc.lines:
                self.stderr.write(f"malformed: {line}")
            raise CommandError(str(exc)) from exc
        except (FileNotFoundError, UnicodeDecodeError) as exc:
            raise CommandError(str(exc)) from exc
        self._run_dir_report(result)

    def _run_dir_report(self, result):
        out, reading, run = self.stdout.write, result.reading, result.run
        out(f"PaddleAPITest run directory {result.root} ({reading.vocabulary} class names; "
            f"{run.device}, {run.run_date or 'undated'} from the {run.date_from or '-'}; "
            f"tolerance {run.tolerance or 'not stated in the log'}):")
        for name, counts in run.per_class.items():
            out(f"  {name}: {counts['lines']} lines read, {counts['found']} configs found, {counts['final']} final")
        for item in reading.in_two_classes:
            out(f"  in {len(item.classes)} classes, counted once as {item.result_class}: "
                f"{', '.join(item.classes)} — {item.config[:120]}")
        for name in reading.not_read:
            out(f"  not read (a class neither vocabulary has): {name}")
        out(f"{len(reading.configs)} distinct configs; checkpoint {reading.checkpointed} "
            f"({reading.unclassified} in no class); log: {reading.log.cases} cases, {reading.log.unfinished} unfinished")
        if result.already_imported:
            out(f"already imported (PaddleAPITest run #{run.pk}): nothing changed")
            return
        out(f"{result.configs_added} failing configs added to {result.kernel} tasks; "
            f"{result.results_stored} PaddleAPITest results stored (run #{run.pk}) in {result.seconds:.1f} s")
        for api, count in sorted(result.failing_without_task.items()):
            out(f"  failing, no {result.kernel} task: {api}: {count}")
        for name, count in sorted(result.not_stored.items()):
            out(f"  not stored (no failing config of a task): {name}: {count}")
