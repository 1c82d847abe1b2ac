"""Diagnose tasks' strictly failing configs: python manage.py diagnose [--task N ...|--api NAME|--all] [--inline].

Queued for qcluster (the CPU queue) by default; --inline diagnoses in this process and prints each task's
distinct failures.
"""
from django.core.management.base import BaseCommand, CommandError

from tracker.selectors.diagnoses import task_diagnosis
from tracker.services import cpu_evidence as cpu_evidence_service
from tracker.services import diagnoses as diagnosis_service
from tracker.services import runs as run_service
from tracker.vocab import ScopeKind


class Command(BaseCommand):
    help = "Diagnose the failing configs of tasks: float64 oracle, shrunk input, repro script (CPU lane)."

    def add_arguments(self, parser):
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--task", type=int, nargs="+", action="extend", metavar="N",
                           help="task number(s); a GPU task's configs that fail on the CPU lane (retest --on-cpu)")
        scope.add_argument("--api", metavar="NAME", help="every CPU task of this API")
        scope.add_argument("--all", action="store_true", help="every CPU task")
        parser.add_argument("--max-configs", type=int, help="configs per task (default DIAGNOSE_MAX_CONFIGS)")
        parser.add_argument("--inline", action="store_true", help="diagnose in this process instead of queueing")

    def handle(self, *args, **options):
        kind = ScopeKind.TASKS if options["task"] else ScopeKind.API if options["api"] else ScopeKind.ALL
        try:
            # a GPU task named by number is diagnosed on its CPU-lane failures (its CPU evidence)
            tasks = cpu_evidence_service.diagnosable_tasks(kind, tasks=options["task"], api=options["api"])
        except run_service.RunError as exc:
            raise CommandError(str(exc)) from exc
        if not options["inline"]:
            job = diagnosis_service.start_diagnosis(tasks)
            self.stdout.write(f"diagnosis of {len(tasks)} tasks queued (job {job})")
            return
        for task in tasks:
            stored = diagnosis_service.diagnose_task(task, options["max_configs"])
            summary = task_diagnosis(task)
            self.stdout.write(f"No.{task.number} {task.api}: {summary.failing} failing configs, {len(stored)} "
                              f"diagnosed now, {len(summary.distinct)} distinct failures")
            for failure in summary.distinct:
                d = failure.representative
                self.stdout.write(f"  {failure.count} × {d.status} {d.direction} {d.reading}: {d.shrunk_config}")
