import json

from django.conf import settings
from django.core.management.base import BaseCommand

from tracker.github.pr_titles import parse_pr_title


class Command(BaseCommand):
    help = 'Print the board tasks a PR title links: {"tasks": [...], "part": bool, "revert": bool}.'

    def add_arguments(self, parser):
        parser.add_argument("title")
        parser.add_argument("--prefix", default=None, help="title prefix (default: settings.GITHUB_PR_TITLE_PREFIX)")
        parser.add_argument("--json", action="store_true", help="print JSON (the default output as well)")

    def handle(self, *args, title, prefix=None, **options):
        result = parse_pr_title(title, prefix or settings.GITHUB_PR_TITLE_PREFIX, max_tasks=settings.CLAIM_MAX_TASKS)
        self.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False))
