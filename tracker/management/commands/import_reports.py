"""`python manage.py import_reports [DIR]` — attach PaddleAPITest's failing configs to the board's tasks, then
store what the reports' logs say about each of them (`--no-logs` skips the logs, `--logs-only` reads only them)."""
from django.core.management.base import BaseCommand, CommandError

from tracker.selectors.reported import reports_root
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

    def handle(self, *args, dir=None, no_logs=False, logs_only=False, **options):
        root = dir or reports_root()
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
