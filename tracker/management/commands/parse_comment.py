import json
import sys

from django.conf import settings
from django.db import DatabaseError
from django.core.management.base import BaseCommand, CommandError

from tracker.github.comments import parse_comment
from tracker.services.claims import board_limits


class Command(BaseCommand):
    help = ("Read a tracking-issue comment on stdin and print its claims, withdrawals and errors "
            '({"claim": [...], "withdraw": [...], "errors": [...]}).')

    def add_arguments(self, parser):
        parser.add_argument("--max-task", type=int, default=None,
                            help="numbers above N are errors (default: the board's size)")
        parser.add_argument("--json", action="store_true", help="print JSON (the default output as well)")

    def handle(self, *args, max_task=None, **options):
        try:
            top, locked = board_limits()
        except DatabaseError as error:
            # Parsing needs no database; without one only --max-task bounds the numbers.
            self.stderr.write(f"board not readable ({error}); locked tasks unknown")
            top, locked = None, {}
        if max_task is None:
            max_task = top
            if max_task is None:
                self.stderr.write("the board is empty: no upper bound on task numbers (use --max-task N)")
        elif max_task < 1:
            raise CommandError("--max-task must be at least 1")
        body = sys.stdin.read()
        result = parse_comment(body, max_task=max_task, locked=locked, max_tasks=settings.CLAIM_MAX_TASKS)
        self.stdout.write(json.dumps(result.as_dict(), ensure_ascii=False))
