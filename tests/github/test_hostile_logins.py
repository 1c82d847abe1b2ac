"""Logins that GitHub cannot send (`<script>…`, `a/b?c#d`) are refused by every source — webhook, poller,
board import, sign-in — with the reason, and change nothing; one already stored never breaks a page."""
import json

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model

from tracker.github.logins import is_github_login, login_problem
from tracker.models import Claim, Contributor, Event, IssueComment, PullRequest, Source, Task, WebhookDelivery
from tracker.services.board_import import load_board_text
from tracker.services.claim_rules import claim_task

from . import payloads
from .conftest import sign_in_with_github
from .test_poller import run_sync
from .test_webhook import deliver

BAD_LOGINS = ["<script>alert(1)</script>", "a/b?c#d", "-lead", "trail-", "dou--ble", "a" * 40, "with space",
              "ünïcode", "name[bot]x", "[bot]"]
GOOD_LOGINS = ["BeingGod", "ooooo-create", "Z-NAVY", "a", "a" * 39, "1-2-3", "dependabot[bot]",
               "github-actions[bot]"]


def board_changed() -> bool:
    return (Claim.objects.exists() or Contributor.objects.exists() or IssueComment.objects.exists()
            or PullRequest.objects.exists() or WebhookDelivery.objects.exists())


def pages_answer(client, *urls):
    return {url: client.get(url).status_code for url in urls}


@pytest.mark.parametrize("login", GOOD_LOGINS)
def test_github_logins_and_app_bots_pass_the_rule(login):
    assert login_problem(login) is None and is_github_login(login)


@pytest.mark.parametrize("login", BAD_LOGINS + [None, 7, ""])
def test_anything_else_is_refused_with_the_rule_in_the_reason(login):
    problem = login_problem(login)
    assert problem and not is_github_login(login)
    assert "not a GitHub login" in problem or "must be a string" in problem


@pytest.mark.parametrize("login", ["<script>alert(1)</script>", "a/b?c#d", "trail-"])
def test_a_signed_comment_by_a_bad_login_is_refused_and_every_page_still_answers(client, board, webhook_settings,
                                                                                 login):
    event = payloads.issue_comment_event("created", payloads.comment(2874700001, login, "【报名】: 12、13",
                                                                     "2025-05-12T03:21:45Z"))
    response = deliver(client, "issue_comment", event)
    assert response.status_code == 400
    assert "comment.user.login" in response.json()["error"] and "not a GitHub login" in response.json()["error"]
    assert not board_changed() and not Event.objects.exists()
    assert pages_answer(client, "/", "/charts/contributors", "/tasks/12", "/tasks/13") == {
        "/": 200, "/charts/contributors": 200, "/tasks/12": 200, "/tasks/13": 200}


def test_a_signed_pull_request_by_a_bad_login_is_refused(client, board, webhook_settings):
    event = payloads.pull_request_event("opened", payloads.pull(73001, "[Accuracy diff No.12] Fix", "a/b?c#d"))
    response = deliver(client, "pull_request", event, delivery="pr-bad-login")
    assert response.status_code == 400 and "pull_request.user.login" in response.json()["error"]
    assert not board_changed()
    assert client.get("/tasks/12").status_code == 200


def test_an_app_bot_comment_is_accepted_and_claims_nothing(client, board, webhook_settings):
    event = payloads.issue_comment_event("created", payloads.comment(2874700002, "dependabot[bot]", "【报名】: 12",
                                                                     "2025-05-12T03:21:45Z"))
    response = deliver(client, "issue_comment", event, delivery="bot-comment")
    assert response.status_code == 200 and response.json()["skipped"] == "bot account dependabot[bot]"
    assert not Claim.objects.exists()


def test_a_bad_login_already_stored_is_shown_as_text_not_a_500(client, board):
    """Rows written before the rule (or by hand in the admin) keep the board readable."""
    task = Task.objects.get(number=12)
    for login in ("<script>alert(1)</script>", "a/b?c#d", "BeingGod"):
        assert claim_task(task, Contributor.objects.create(login=login), source=Source.SEED, source_ref="by hand")
    PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=73002, title="[Accuracy diff No.12] x",
                               author=Contributor.objects.get(login="a/b?c#d")).tasks.add(task)
    for url in ("/", "/charts/contributors", "/tasks/12"):
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert "<script>alert(1)</script>" not in page
        assert "@&lt;script&gt;alert(1)&lt;/script&gt;" in page and "@a/b?c#d" in page
        assert 'href="/contributors/BeingGod"' in page  # a good login keeps its link
        assert 'href="/contributors/a/b' not in page


def test_the_poller_skips_a_comment_or_pr_by_a_bad_login_with_the_reason(board, fake_github):
    fake_github.add_comment(payloads.comment(2874800001, "<script>x</script>", "【报名】: 1", "2025-05-12T03:21:45Z"))
    fake_github.add_comment(payloads.comment(2874800002, "BeingGod", "【报名】: 2", "2025-05-12T03:22:45Z"))
    fake_github.pulls.append(payloads.search_item(73003, "[Accuracy diff No.3] Fix", "a/b?c#d"))
    _, report = run_sync(fake_github, pr_repos=["PaddlePaddle/Paddle"])
    assert report.comments_seen == 2 and report.prs_seen == 1
    assert any("comment 2874800001" in e and "not a GitHub login" in e for e in report.errors), report.errors
    assert any("pull request PaddlePaddle/Paddle#73003" in e and "not a GitHub login" in e for e in report.errors), report.errors
    assert list(Contributor.objects.values_list("login", flat=True)) == ["BeingGod"]
    assert list(Claim.objects.values_list("task__number", flat=True)) == [2]
    assert not PullRequest.objects.exists()
    assert not IssueComment.objects.filter(comment_id=2874800001).exists()


@pytest.mark.parametrize("cell", ["@dou--ble", "@trail-", "@" + "a" * 40])
def test_a_board_row_with_a_bad_login_is_a_row_error(db, cell):
    text = f"序号\tAPI\tkernel类别\t报名人/状态/PR\n1\tpaddle.add_n\tCPU\t{cell}\n2\tpaddle.all\tGPU\t@BeingGod\n"
    report = load_board_text(text, source="board.txt")
    assert len(report.errors) == 1 and report.errors[0].startswith("board.txt:2: ")
    assert "not a GitHub login" in report.errors[0]
    assert list(Contributor.objects.values_list("login", flat=True)) == ["BeingGod"]
    assert not Task.objects.filter(number=1).exists()


def test_a_bad_markdown_board_login_is_a_row_error(db):
    badge = '<img src="https://img.shields.io/badge/状态-报名-2ECC71" />'
    text = ("| 序号 | API | kernel类别 | 报名人/状态/PR |\n|------|-----|-----------|----------------|\n"
            f"| 1 | paddle.add_n | CPU | @x- {badge}<br> |\n")
    report = load_board_text(text, source="board.md")
    assert len(report.errors) == 1 and "not a GitHub login" in report.errors[0]
    assert not Contributor.objects.exists()


def test_sign_in_with_a_bad_login_signs_nobody_in_and_stores_nothing(client, board, oauth_settings, fake_github):
    answer = sign_in_with_github(client, fake_github, "<script>alert(1)</script>")
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "Sign-in refused" in page and "not a GitHub login" in page and "<script>alert(1)" not in page
    assert not SocialAccount.objects.exists() and not get_user_model().objects.exists()
    assert not Contributor.objects.exists()
    assert client.get("/github/profile").status_code in (302, 200)
    assert "Signed in with GitHub" not in client.get("/").content.decode()


def test_a_known_account_whose_login_turns_bad_keeps_its_stored_login(client, board, oauth_settings, fake_github):
    sign_in_with_github(client, fake_github, "ooooo-create", user_id=86523)
    client.logout()
    answer = sign_in_with_github(client, fake_github, "a/b?c#d", user_id=86523)
    assert answer.status_code == 400
    assert SocialAccount.objects.get().extra_data["login"] == "ooooo-create"
    assert json.dumps(list(Contributor.objects.values_list("login", flat=True))) == '["ooooo-create"]'
