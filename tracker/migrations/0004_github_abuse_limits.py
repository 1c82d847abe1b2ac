"""Claim.withdrawn_source (a board re-import only undoes its own withdrawals) and
IssueComment.on_behalf_of (the site's `【报名】: N (for @login)` comments)."""
import re

from django.db import migrations, models


def withdrawn_source_from_events(apps, schema_editor):
    """Existing withdrawals: the source of the newest `withdrawn` event of that person on that task."""
    Claim = apps.get_model("tracker", "Claim")
    Event = apps.get_model("tracker", "Event")
    for claim in Claim.objects.filter(withdrawn_at__isnull=False).select_related("contributor"):
        login = claim.contributor.login
        for event in Event.objects.filter(task_id=claim.task_id, kind="withdrawn").order_by("-created", "-id"):
            if re.match(r"@" + re.escape(login) + r"\b", event.message, re.IGNORECASE):
                claim.withdrawn_source = event.source
                claim.save(update_fields=["withdrawn_source"])
                break


class Migration(migrations.Migration):
    dependencies = [
        ("tracker", "0003_verdict_layers"),
    ]

    operations = [
        migrations.AddField(
            model_name="claim",
            name="withdrawn_source",
            field=models.CharField(blank=True, choices=[("seed", "board import"), ("import", "report import"),
                                                        ("comment", "issue comment"), ("pr", "pull request"),
                                                        ("web", "web user"), ("run", "re-test run"),
                                                        ("admin", "admin")], default="", max_length=20),
        ),
        migrations.AddField(
            model_name="issuecomment",
            name="on_behalf_of",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.RunPython(withdrawn_source_from_events, migrations.RunPython.noop),
    ]
