"""`python manage.py bootstrap_board` — fill an empty board for a fresh machine (safe to run every start).

Loads fixtures/board.json when the database holds no task yet (it does not migrate: run `migrate` first),
then runs import_reports when the PaddleAPITest reports directory exists. Running it again changes nothing.
"""
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from tracker.models import Claim, Contributor, Event, PullRequest, Task
from tracker.selectors.reported import reports_root

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "board.json"


class Command(BaseCommand):
    help = "Load the board fixture into an empty database and import the PaddleAPITest reports when present."

    def add_arguments(self, parser):
        parser.add_argument("--reports", default=None, help="reports directory (default: env PADDLEAPITEST_REPORTS, else the engine's default)")
        parser.add_argument("--fixture", default=str(FIXTURE))

    def handle(self, *args, reports=None, fixture=str(FIXTURE), **options):
        leftovers = [m.__name__ for m in (Contributor, Claim, PullRequest, Event) if m.objects.exists()]
        if Task.objects.exists():
            self.stdout.write(f"board already holds {Task.objects.count()} tasks; fixture not loaded")
        elif leftovers:
            # The fixture carries primary keys: loading it over existing rows would overwrite them.
            raise CommandError(
                f"no task stored but {', '.join(leftovers)} rows exist: not loading {fixture} over them; "
                "import the board with `manage.py load_board PATH` instead"
            )
        else:
            call_command("loaddata", fixture, verbosity=0)
            self.stdout.write(f"loaded {Task.objects.count()} tasks from {fixture}")
        reports_dir = Path(reports or reports_root())
        if reports_dir.is_dir():
            call_command("import_reports", str(reports_dir), stdout=self.stdout, stderr=self.stderr)
        else:
            self.stdout.write(f"no PaddleAPITest reports at {reports_dir}: failing configs not imported "
                              "(set PADDLEAPITEST_REPORTS and run `manage.py import_reports`)")
