"""`python manage.py import_reports [DIR]` — attach PaddleAPITest's failing configs to the board's tasks."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tracker.services.report_import import import_reports


class Command(BaseCommand):
    help = "Attach PaddleAPITest's failing configs (reports + history) to the board's tasks."

    def add_arguments(self, parser):
        parser.add_argument("dir", nargs="?", default=None,
                            help="reports directory (default: settings.PADDLEAPITEST_REPORTS / env PADDLEAPITEST_REPORTS)")

    def handle(self, *args, dir=None, **options):
        root = dir or settings.PADDLEAPITEST_REPORTS
        try:
            result = import_reports(root)
        except (FileNotFoundError, UnicodeDecodeError) as exc:
            raise CommandError(str(exc)) from exc
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
