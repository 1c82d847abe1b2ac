"""`python manage.py load_board PATH` — import the tracking issue's task table (plain or bot markdown form)."""
import sys

from django.core.management.base import BaseCommand, CommandError

from tracker.services.board_import import BoardFormatError, load_board_file, load_board_text


class Command(BaseCommand):
    help = "Import the tracking issue's task table (the seed's plain rendering or the bot's markdown table)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="file holding the issue body, or - for stdin")
        parser.add_argument("--strict", action="store_true", help="exit with an error when any row was skipped")

    def handle(self, *args, path, strict=False, **options):
        try:
            report = load_board_text(sys.stdin.read(), source="<stdin>") if path == "-" else load_board_file(path)
        except (OSError, UnicodeDecodeError, BoardFormatError) as exc:
            raise CommandError(f"{path}: {exc}") from exc
        for change in report.changes:
            self.stdout.write(change)
        for kept in report.kept_withdrawn:
            self.stdout.write(f"kept withdrawn: {kept}")
        for error in report.errors:
            self.stderr.write(error)
        self.stdout.write(report.summary())
        if strict and report.errors:
            raise CommandError(f"{len(report.errors)} row(s) skipped")
