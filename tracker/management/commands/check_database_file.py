"""Refuse to go on when the SQLite database file is missing (scripts/serve.sh runs this before `migrate`).

`migrate` creates a missing SQLite file: a production start after the file was deleted or moved would serve an
empty board, silently. A new site says so with WEB_CREATE_DATABASE=1 (then `manage.py bootstrap_board`).
"""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from tracker.web.health import database_path


class Command(BaseCommand):
    help = "Exit 1 when the SQLite database file is missing, unless WEB_CREATE_DATABASE=1 (a new site)."

    def handle(self, *args, **options):
        path = database_path(connections["default"].settings_dict)
        if path is None or path.is_file():
            return
        if settings.WEB_CREATE_DATABASE:
            self.stdout.write(f"a new database: {path.name} is created by migrate (WEB_CREATE_DATABASE=1)")
            return
        raise CommandError(
            f"the SQLite database file {path} does not exist: restore it from a backup, or, for a new site, set "
            "WEB_CREATE_DATABASE=1 so that migrate creates it (then run manage.py bootstrap_board)")
