"""The reference drift (issue #46): python manage.py torch_drift [--lane cpu] [--json] — per API, the configs whose
strict/exact verdict changes when only the Torch version moves (the same Paddle build and thread count)."""
import json

from django.core.management.base import BaseCommand

from tracker.selectors.provenance import drift_report
from tracker.vocab import Lane


class Command(BaseCommand):
    help = "Per API, the configs whose verdict changes when only Torch moves (read from the stored provenance)."

    def add_arguments(self, parser):
        parser.add_argument("--lane", choices=Lane.values, default=None, help="only runs of this lane")
        parser.add_argument("--json", action="store_true", help="one JSON document")

    def handle(self, *args, **options):
        report = drift_report(options["lane"])
        if options["json"]:
            self.stdout.write(json.dumps({"apis": report}))
            return
        if not report:
            self.stdout.write("no config changes its verdict when only Torch moves (among the verdicts stored with "
                              "two Torch versions on one Paddle build and thread count)")
        for entry in report:
            self.stdout.write(f"{entry['api']}: {len(entry['configs'])} config(s)")
            for row in entry["configs"]:
                verdicts = ", ".join(f"torch {torch}: {verdict}" for torch, verdict in row["verdicts"])
                self.stdout.write(f"  {row['config']}  —  {verdicts}")
