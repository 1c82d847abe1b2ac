"""The GitHub poll job moved from tracker/github/tasks.py (`poll`) to tracker/tasks.py (`poll_github_task`): github/ is
the GitHub adapter only, and the job calls a service.

django-q2 stores a schedule's job as a dotted path (Schedule.func) and imports it on every tick, so a schedule
made as docs/github-sync.md said before would fail from now on: its rows are renamed here (and back on reverse).
A poll job already on the queue under the old name when the site is upgraded fails once; the next tick of the
renamed schedule polls again.
"""
from django.db import migrations

OLD_PATH = "tracker.github.tasks.poll"
NEW_PATH = "tracker.tasks.poll_github_task"


def rename_schedules(apps, old: str, new: str) -> int:
    schedule = apps.get_model("django_q", "Schedule")
    return schedule.objects.filter(func=old).update(func=new)


def forwards(apps, schema_editor):
    rename_schedules(apps, OLD_PATH, NEW_PATH)


def backwards(apps, schema_editor):
    rename_schedules(apps, NEW_PATH, OLD_PATH)


class Migration(migrations.Migration):

    dependencies = [
        ("tracker", "0015_testrun_waiting"),
        # Schedule.func exists since django-q's first migration; no later one is needed.
        ("django_q", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
