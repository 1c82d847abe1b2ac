"""django-q2 entry point for polling GitHub on a schedule (when no webhook can reach the site).

    from django_q.tasks import schedule
    schedule("tracker.github.tasks.poll", schedule_type="I", minutes=10)
"""
from django.conf import settings

from .client import client_from_settings, parse_issue_ref
from ..services.github_sync import sync_github


def poll() -> list[str]:
    """One incremental sync of the tracking issue and the board's PRs; returns the report lines."""
    repo, issue = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    client = client_from_settings()
    report = sync_github(client, repo=repo, issue=issue, pr_repos=settings.GITHUB_PR_REPOS,
                         prefix=settings.GITHUB_PR_TITLE_PREFIX)
    return report.lines()
