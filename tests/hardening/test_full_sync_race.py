"""A full poll never takes a comment posted while it was listing (a site claim) for a deleted one.

Found by tests/hardening/test_concurrent_writes.py on PostgreSQL: a `sync_github --full` that listed the
comments before the site posted its `【报名】` comment withdrew that fresh site claim.
"""
from datetime import timedelta

from django.utils import timezone

from tests.github.conftest import board, fake_github, github_settings  # noqa: F401  (fixtures)
from tracker.github.client import client_from_settings
from tracker.services.github_sync import sync_github
from tracker.models import IssueComment

URL = "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-{}"


def test_full_sync_withdraws_only_comments_older_than_its_listing(board, github_settings):
    now = timezone.now()
    IssueComment.objects.create(comment_id=41, author="someone", url=URL.format(41), body="【报名】: 3",
                                created_at=now - timedelta(days=30))
    IssueComment.objects.create(comment_id=42, author="paddle-bot", url=URL.format(42), body="【报名】: 4 (for @x)",
                                created_at=now)  # posted by the site while the poll was listing
    report = sync_github(client_from_settings(), repo="PaddlePaddle/Paddle", issue=72667, pr_repos=[],
                         prefix="Accuracy diff", full=True, comments=True, pulls=False)
    assert report.comments_deleted == 1
    assert IssueComment.objects.get(comment_id=41).deleted
    assert not IssueComment.objects.get(comment_id=42).deleted
