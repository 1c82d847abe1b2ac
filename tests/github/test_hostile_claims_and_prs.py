"""Round three of hostile input against the GitHub readers: digits other than ASCII and full-width never
claim, a separator the reader does not know is reported back, and a pull_request delivery counts only
when every field that names a repository names a board repository — through the real parser and the
real webhook endpoint."""
import pytest

from tracker.github.comments import parse_comment
from tracker.github.pr_titles import parse_pr_title
from tracker.models import Claim, Event, PullRequest, Task, WebhookDelivery

from . import payloads
from .test_webhook import deliver

pytestmark = pytest.mark.usefixtures("webhook_settings")  # the webhook's secret (tests/conftest.py)

# "12" in digits Python's \d and int() accept but the docs never promised.
OTHER_DIGITS = {"arabic-indic": "١٢", "extended arabic-indic": "۱۲", "devanagari": "१२",
                "mathematical bold": "𝟏𝟐", "mathematical monospace": "𝟷𝟸", "bengali": "১২"}


@pytest.mark.parametrize("digits", OTHER_DIGITS.values(), ids=OTHER_DIGITS.keys())
def test_other_unicode_digits_claim_nothing(digits):
    for body in (f"【报名】: {digits}", f"【报名】: 3、{digits}", f"认领 {digits}", f"【报名】: 1{digits}"):
        parse = parse_comment(body, max_task=183)
        assert 12 not in parse.claim and 112 not in parse.claim and 1 not in parse.claim, (body, parse.as_dict())
    # The line with only such digits is reported, not silently ignored.
    assert [e.code for e in parse_comment(f"【报名】: {digits}", max_task=183).errors] == ["no_numbers"]
    assert parse_pr_title(f"[Accuracy diff No.{digits}] fix").tasks == []


def test_ascii_and_full_width_digits_still_claim():
    assert parse_comment("【报名】: 12、１３、１4-１6", max_task=183).claim == [12, 13, 14, 15, 16]
    assert parse_pr_title("[Accuracy diff No.１２、13] fix").tasks == [12, 13]


@pytest.mark.parametrize("body, claimed, mark, column", [
    ("【报名】: 10～12—13－14", [10, 11, 12], "—", 12),
    ("【报名】: 3/4", [3], "/", 8),
    ("【报名】: 5、7 | 9", [5, 7], "|", 11),
    ("认领 No.20 + No.21", [20], "+", 10),
])
def test_an_unknown_separator_is_reported_with_its_column(body, claimed, mark, column):
    parse = parse_comment(body, max_task=183)
    assert parse.claim == claimed
    [error] = parse.errors
    assert error.code == "unknown_separator" and error.line == 1 and error.column == column
    assert body[error.column - 1] == mark and f"“{mark}”" in error.message


@pytest.mark.parametrize("body", ["【报名】: 12 (和14一起修)", "【报名】: 12（for @someone）", "【报名】: 12。", "【报名】: 12, 13",
                                  "【报名】: 12 谢谢", "【报名】: 12!"])
def test_remarks_after_the_list_are_not_separators(body):
    assert parse_comment(body, max_task=183).errors == []


def test_an_unknown_separator_is_reported_back_through_the_webhook(client, board):
    body = "【报名】: 10～12—13－14"
    event = payloads.issue_comment_event("created", payloads.comment(2874700101, "BeingGod", body, "2025-05-12T03:21:45Z"))
    answer = deliver(client, "issue_comment", event, delivery="sep-1")
    assert answer.status_code == 200
    assert sorted(Claim.objects.values_list("task__number", flat=True)) == [10, 11, 12]
    errors = Event.objects.get(kind="comment_errors")
    assert [e["code"] for e in errors.data["errors"]] == ["unknown_separator"]
    assert "“—”" in errors.message or "“—”" in str(errors.data)


def _pr_event_naming(base_repo: str | None, *, repository: str | None, html_repo: str, api_repo: str) -> dict:
    pull = payloads.pull(73111, "[Accuracy diff No.55] gelu", "mallory")
    pull["html_url"] = f"https://github.com/{html_repo}/pull/73111"
    pull["url"] = f"https://api.github.com/repos/{api_repo}/pulls/73111"
    if base_repo is None:
        pull.pop("base")
    else:
        pull["base"]["repo"] = payloads.repository(base_repo)
    event = payloads.pull_request_event("opened", pull)
    if repository is None:
        event.pop("repository")
    else:
        event["repository"] = payloads.repository(repository)
    return event


BOARD, OTHER = "PaddlePaddle/Paddle", "mallory/elsewhere"


@pytest.mark.parametrize("names", [
    dict(base_repo=OTHER, repository=None, html_repo=BOARD, api_repo=BOARD),  # the issue's case
    dict(base_repo=OTHER, repository=BOARD, html_repo=BOARD, api_repo=BOARD),
    dict(base_repo=BOARD, repository=BOARD, html_repo=OTHER, api_repo=BOARD),
    dict(base_repo=BOARD, repository=BOARD, html_repo=BOARD, api_repo=OTHER),
    dict(base_repo=None, repository=None, html_repo=OTHER, api_repo=OTHER),
    dict(base_repo=BOARD, repository=OTHER, html_repo=BOARD, api_repo=BOARD),
], ids=["base-only-other", "base-other", "html-url-other", "api-url-other", "urls-only-other", "repository-other"])
def test_a_pull_request_naming_another_repository_anywhere_changes_nothing(client, board, names):
    answer = deliver(client, "pull_request", _pr_event_naming(**names), delivery="pr-repo-1")
    assert answer.status_code == 202 and "not a board repository" in answer.json()["ignored"]
    assert not PullRequest.objects.exists() and not Claim.objects.exists()
    assert Task.objects.get(number=55).status == board[55].status
    assert WebhookDelivery.objects.get(delivery_id="pr-repo-1").outcome.startswith("pull request in mallory/")


def test_a_pull_request_naming_only_board_repositories_links(client, board):
    event = _pr_event_naming(BOARD, repository=None, html_repo=BOARD, api_repo=BOARD)
    assert deliver(client, "pull_request", event, delivery="pr-repo-2").status_code == 200
    assert PullRequest.objects.get(number=73111).repo == BOARD
    assert Claim.objects.get(task__number=55).contributor.login == "mallory"
