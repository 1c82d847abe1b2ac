"""A GitHub that hangs, stalls, trickles, resets or answers garbage: the REST client turns every one into
GitHubError within its timeout (settings.GITHUB_API_TIMEOUT), and the webhook records a `(for @x)` comment
whose lookup of the site's account fails (no 500), holding its claims until a later read can ask GitHub.

Everything talks to the fake GitHub over real HTTP on 127.0.0.1, made to fail with `faults`."""
import socket
import time

import pytest
from django.core.cache import cache

from tracker.github.client import GitHubClient, GitHubError
from tracker.models import Claim, Event, IssueComment, SyncCursor, WebhookDelivery
from tracker.services.github_sync import sync_github

from . import payloads
from .test_webhook import deliver

TIMEOUT = 0.3  # the client's timeout in these tests; GitHub's failures last fault_seconds = 2
SITE_LOGIN = "board-poster"


@pytest.mark.parametrize("fault", ["hang", "stall", "trickle", "reset", "disconnect", "not-json"])
def test_every_network_failure_is_a_github_error_within_the_timeout(fake_github, fault):
    fake_github.faults["/user"], fake_github.fault_seconds = fault, 2.0
    client = GitHubClient(fake_github.url, "ghs_t", timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(GitHubError) as raised:
        client.get_user()
    seconds = time.monotonic() - started
    assert raised.value.status == 0 and raised.value.url == f"{fake_github.url}/user"
    assert seconds < TIMEOUT + 0.7, f"{fault}: {seconds:.2f} s"
    expected = {"hang": "no answer in time", "stall": "no answer in time", "trickle": "no answer in time",
                "not-json": "is not JSON"}.get(fault, "cannot reach GitHub")
    assert expected in raised.value.message, raised.value.message
    # The same GitHub answering again: the client works (nothing about the failure sticks).
    fake_github.faults.clear()
    assert client.get_user()["login"] == "paddle-bot"


def test_nothing_listening_is_a_github_error(fake_github):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(GitHubError, match="cannot reach GitHub"):
        GitHubClient(f"http://127.0.0.1:{port}", "t", timeout=TIMEOUT).get("user")


@pytest.fixture
def hanging_lookup(github_settings, fake_github, db):
    """The site posts as SITE_LOGIN, which the board learns from GitHub (GET /user) — and /user hangs."""
    github_settings.GITHUB_WEBHOOK_SECRET = "It's a Secret to Everybody"
    github_settings.GITHUB_BOT_LOGIN = ""
    github_settings.GITHUB_API_TIMEOUT = TIMEOUT
    fake_github.token_login = SITE_LOGIN
    fake_github.faults["/user"], fake_github.fault_seconds = "hang", 2.0
    cache.clear()  # nobody has asked GitHub yet
    yield fake_github
    cache.clear()


def site_comment(comment_id: int, body: str, created: str, updated: str | None = None) -> dict:
    return payloads.comment(comment_id, SITE_LOGIN, body, created, updated)


def active(number: int) -> list[str]:
    return sorted(Claim.objects.filter(task__number=number, withdrawn_at__isnull=True)
                  .values_list("contributor__login", flat=True))


def poll(fake_github):
    return sync_github(GitHubClient(fake_github.url, "ghs_test_token", timeout=TIMEOUT), repo=payloads.REPO,
                       issue=payloads.ISSUE, pr_repos=[], prefix="Accuracy diff", pulls=False)


def test_a_for_comment_whose_lookup_hangs_is_recorded_and_held_then_applied_when_github_answers(
        client, board, hanging_lookup):
    the_comment = site_comment(2876000001, "【报名】: 21 (for @someone)", "2025-05-20T00:00:00Z")
    started = time.monotonic()
    response = deliver(client, "issue_comment", payloads.issue_comment_event("created", the_comment),
                       delivery="held-1")
    assert time.monotonic() - started < 1.5
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["claimed"] == [] and "held" not in answer  # the answer's shape is the usual one
    assert [e["code"] for e in answer["errors"]] == ["site_account_unknown"]
    assert "could not say whether @board-poster is the site's account" in answer["skipped"]
    # Recorded: the delivery, the comment as read, and an event saying where and why; nobody claimed 21.
    assert WebhookDelivery.objects.filter(delivery_id="held-1").exists()
    stored = IssueComment.objects.get(comment_id=2876000001)
    assert stored.body == the_comment["body"] and stored.claimed == []
    event = Event.objects.get(kind="comment_errors")
    assert event.source_ref == the_comment["html_url"] and "held" in event.message
    assert active(21) == [] and not Claim.objects.exists()

    # GitHub answers again; the next poll reads the comment and credits the person it names.
    hanging_lookup.faults.clear()
    hanging_lookup.add_comment(the_comment)
    report = poll(hanging_lookup)
    assert active(21) == ["someone"] and report.comments_changed == 1
    assert not Claim.objects.filter(contributor__login=SITE_LOGIN).exists()
    assert IssueComment.objects.get(comment_id=2876000001).on_behalf_of == "someone"
    # Read once more, it is what was applied.
    assert poll(hanging_lookup).comments_changed == 0


def test_a_held_edit_keeps_the_claims_the_comment_made_before(client, board, hanging_lookup, settings):
    settings.GITHUB_BOT_LOGIN = SITE_LOGIN  # known at first: the comment applies at once
    first = site_comment(2876000002, "【报名】: 21 (for @someone)", "2025-05-20T00:00:00Z")
    assert deliver(client, "issue_comment", payloads.issue_comment_event("created", first),
                   delivery="edit-0").json()["claimed"] == [21]
    settings.GITHUB_BOT_LOGIN = ""  # … then asked from GitHub, which hangs
    edited = site_comment(2876000002, "【报名】: 22 (for @someone)", "2025-05-20T00:00:00Z", "2025-05-21T00:00:00Z")
    answer = deliver(client, "issue_comment", payloads.issue_comment_event("edited", edited),
                     delivery="edit-1").json()
    assert answer["withdrawn"] == [] and answer["claimed"] == []
    assert active(21) == ["someone"] and active(22) == []
    assert IssueComment.objects.get(comment_id=2876000002).on_behalf_of == "someone"

    hanging_lookup.faults.clear()
    hanging_lookup.add_comment(edited)
    poll(hanging_lookup)
    assert active(21) == [] and active(22) == ["someone"]


def test_a_poll_that_holds_a_comment_starts_there_next_time(board, hanging_lookup):
    held = site_comment(2876000003, "【报名】: 30 (for @someone)", "2025-05-20T00:00:00Z")
    later = payloads.comment(2876000004, "BeingGod", "【报名】: 31", "2025-05-22T00:00:00Z")
    hanging_lookup.add_comment(held)
    hanging_lookup.add_comment(later)
    report = poll(hanging_lookup)
    assert active(30) == [] and active(31) == ["BeingGod"]
    assert any("2876000003 held" in line for line in report.errors)
    assert any("2876000003 held" in line for line in poll(hanging_lookup).errors)  # still held: read again
    assert Event.objects.filter(kind="comment_errors").count() == 1  # said once
    cursor = SyncCursor.objects.get(key=f"comments:{payloads.REPO}#{payloads.ISSUE}")
    assert cursor.since.isoformat().startswith("2025-05-20T00:00:00") and cursor.etag == ""

    hanging_lookup.faults.clear()
    poll(hanging_lookup)
    assert active(30) == ["someone"] and active(31) == ["BeingGod"]
    cursor.refresh_from_db()
    assert cursor.since.isoformat().startswith("2025-05-22T00:00:00") and cursor.etag
