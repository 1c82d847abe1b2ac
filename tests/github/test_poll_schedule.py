"""The scheduled GitHub poll keeps working after the job moved (github/tasks.py `poll` → tasks.py
`poll_github_task`): a stored django-q Schedule naming the old path is renamed by migration 0017."""
import importlib
import pydoc

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django_q.models import Schedule

from tracker.tasks import poll_github_task

MIGRATION = importlib.import_module("tracker.migrations.0016_poll_schedule_path")


def historical_apps():
    """The models as migration 0017 sees them (the state its RunPython gets from `migrate`)."""
    return MigrationExecutor(connection).loader.project_state(("tracker", "0016_poll_schedule_path")).apps


def test_the_job_path_resolves_the_way_django_q_resolves_it():
    # django-q's worker imports a string job with pydoc.locate (None when it cannot be loaded).
    assert pydoc.locate(MIGRATION.NEW_PATH) is poll_github_task
    assert pydoc.locate(MIGRATION.OLD_PATH) is None  # why stored schedules must be renamed


def test_a_stored_schedule_of_the_old_path_is_renamed_and_back(db):
    poll = Schedule.objects.create(func=MIGRATION.OLD_PATH, schedule_type=Schedule.MINUTES, minutes=10)
    other = Schedule.objects.create(func="tracker.tasks.resume_runs_task", schedule_type=Schedule.HOURLY)
    apps = historical_apps()

    MIGRATION.forwards(apps, None)
    poll.refresh_from_db(), other.refresh_from_db()
    assert (poll.func, poll.minutes, other.func) == (MIGRATION.NEW_PATH, 10, "tracker.tasks.resume_runs_task")

    MIGRATION.backwards(apps, None)
    poll.refresh_from_db(), other.refresh_from_db()
    assert (poll.func, other.func) == (MIGRATION.OLD_PATH, "tracker.tasks.resume_runs_task")
