"""Render the public pages visitors land on into the shared renderings (WEB_SHARED_RENDERINGS), so no visitor waits
for their first rendering: scripts/serve.sh runs it beside gunicorn once it answers; a finished run does the same for
the pages it changed (tracker/tasks.py)."""
import time

from django.core.management.base import BaseCommand, CommandError

from tracker.web import warm


class Command(BaseCommand):
    help = "Render the site's public pages (and --task N's) for visitors into the shared renderings."

    def add_arguments(self, parser):
        parser.add_argument("--task", type=int, action="append", default=[], metavar="N",
                            help=f"also task N's page and API (at most {warm.MAX_TASKS_PER_RUN})")
        parser.add_argument("--all-tasks", action="store_true",
                            help="then every task's page and API (what scripts/serve.sh runs at start)")
        parser.add_argument("--language", action="append", default=None, help="only this language (repeatable)")

    def handle(self, *args, **options):
        if len(options["task"]) > warm.MAX_TASKS_PER_RUN:
            raise CommandError(f"at most {warm.MAX_TASKS_PER_RUN} tasks (--task given {len(options['task'])} times)")
        paths = warm.SITE_PATHS + tuple(warm.task_paths(options["task"]))
        if options["all_tasks"]:
            paths += tuple(warm.every_task_path())
        started = time.monotonic()
        try:
            done = warm.warm(paths, options["language"],
                             report=lambda row: self.stdout.write(
                                 f"{row.status} {row.seconds * 1000:7.0f} ms  {row.language:8s} {row.path}"))
        except warm.NotShared as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"warmed {len(done)} pages in {time.monotonic() - started:.0f} s")
        failed = [row for row in done if row.status != 200]
        if failed:
            raise CommandError(f"{len(failed)} of {len(done)} pages were not rendered (status other than 200)")
