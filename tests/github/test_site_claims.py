"""Claiming on the site: profile login, one-click claim/withdraw, posting or showing the comment."""
import json

import pytest
from django.contrib.auth import get_user_model

from tracker.models import Claim, Contributor, Event
from tracker.services.claims import apply_comment

from . import payloads


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("alice", password="pw-alice")


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def with_login(signed_in, user):
    Contributor.objects.create(login="ooooo-create", user=user)
    return signed_in


def test_anonymous_task_page_shows_the_comment_to_write(client, board):
    page = client.get("/tasks/12").content.decode()
    assert "【报名】: 12" in page
    assert "https://github.com/PaddlePaddle/Paddle/issues/72667" in page
    response = client.post("/github/tasks/12/claim")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Claim.objects.exists()


def test_profile_sets_the_github_login(signed_in, user, board):
    assert signed_in.get("/github/profile").status_code == 200
    response = signed_in.post("/github/profile", {"github_login": "@ooooo-create"})
    assert response.status_code == 302
    assert Contributor.objects.get(user=user).login == "ooooo-create"
    page = signed_in.get("/github/profile").content.decode()
    assert 'value="ooooo-create"' in page


def test_profile_links_an_existing_contributor_and_keeps_their_claims(signed_in, user, board, settings):
    settings.GITHUB_BOT_ACCOUNTS = []
    apply_comment(payloads.comment(1, "NKNaN", "【报名】: 25", "2025-05-12T00:00:00Z"))
    signed_in.post("/github/profile", {"github_login": "nknan"})
    contributor = Contributor.objects.get(user=user)
    assert contributor.login == "NKNaN" and Contributor.objects.count() == 1
    assert "paddle.api_25" in signed_in.get("/github/profile").content.decode()


@pytest.mark.parametrize("login", ["", "has space", "-leading", "x" * 40, "double--dash"])
def test_profile_rejects_invalid_logins(signed_in, user, board, login):
    signed_in.post("/github/profile", {"github_login": login})
    assert not Contributor.objects.filter(user=user).exists()


def test_profile_refuses_a_login_linked_to_someone_else(signed_in, user, board):
    other = get_user_model().objects.create_user("bob")
    Contributor.objects.create(login="co63oc", user=other)
    signed_in.post("/github/profile", {"github_login": "co63oc"})
    assert Contributor.objects.get(login="co63oc").user == other
    assert not Contributor.objects.filter(user=user).exists()


def test_claim_needs_a_github_login(signed_in, board):
    signed_in.post("/github/tasks/12/claim")
    assert not Claim.objects.exists()
    page = signed_in.get("/tasks/12").content.decode()
    assert "/github/profile" in page


def test_claim_without_token_shows_the_exact_comment(with_login, board, settings, fake_github):
    settings.GITHUB_TOKEN = ""
    settings.GITHUB_API_URL = fake_github.url
    response = with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    assert response.status_code == 302 and response["Location"] == "/tasks/12"
    claim = Claim.objects.get(task__number=12)
    assert claim.contributor.login == "ooooo-create" and claim.source == "web" and claim.source_ref == "user:alice"
    event = Event.objects.get(task__number=12, kind="claimed")
    assert event.source == "web" and event.actor == "ooooo-create"
    page = with_login.get("/tasks/12").content.decode()
    assert "paste this comment" in page and "【报名】: 12" in page
    assert "Withdraw" in page
    assert fake_github.requests == []  # nothing was sent to GitHub


def test_claim_with_token_posts_the_comment_and_its_echo_changes_nothing(with_login, board, github_settings,
                                                                         fake_github):
    fake_github.token_login = "board-poster"
    with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    posts = [r for r in fake_github.requests if r["method"] == "POST"]
    assert len(posts) == 1
    assert posts[0]["path"] == "/repos/PaddlePaddle/Paddle/issues/72667/comments"
    assert json.loads(posts[0]["body"]) == {"body": "【报名】: 12"}
    assert posts[0]["headers"]["authorization"] == "Bearer ghs_test_token"
    posted = Event.objects.get(kind="comment_posted", task__number=12)
    assert posted.source_ref.startswith("https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-")
    page = with_login.get("/tasks/12").content.decode()
    assert "paste this comment" not in page
    # The webhook / poller later sees the posted comment: written by the token's account, it claims nothing.
    echo = fake_github.comments[("PaddlePaddle/Paddle", 72667)][0]
    assert apply_comment(echo).skipped == "unchanged"
    assert list(Claim.objects.values_list("contributor__login", flat=True)) == ["ooooo-create"]


def test_withdraw_with_token_posts_the_withdrawal(with_login, board, github_settings, fake_github):
    with_login.post("/github/tasks/12/claim")
    with_login.post("/github/tasks/12/withdraw")
    bodies = [json.loads(r["body"])["body"] for r in fake_github.requests if r["method"] == "POST"]
    assert bodies == ["【报名】: 12", "【取消报名】: 12"]
    assert Claim.objects.get(task__number=12).withdrawn_at is not None
    assert Event.objects.filter(task__number=12, kind="withdrawn", source="web").exists()


def test_failed_post_keeps_the_claim_and_shows_the_comment(with_login, board, github_settings, fake_github):
    # e.g. the token lacks permission
    fake_github.rate_limits.append({"status": 403, "headers": {}, "message": "Resource not accessible by integration"})
    with_login.post("/github/tasks/12/claim")
    assert Claim.objects.filter(task__number=12, withdrawn_at__isnull=True).exists()
    page = with_login.get("/tasks/12").content.decode()
    assert "paste this comment" in page and "【报名】: 12" in page


def test_locked_task_cannot_be_claimed(with_login, board, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/160/claim")
    assert not Claim.objects.exists()
    page = with_login.get("/tasks/160").content.decode()
    assert "暂不要报名" in page
    assert "/github/tasks/160/claim" not in page


def test_claiming_twice_is_one_claim(with_login, board, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/12/claim")
    with_login.post("/github/tasks/12/claim")
    assert Claim.objects.count() == 1
    assert Event.objects.filter(kind="claimed").count() == 1


def test_claim_page_in_chinese(with_login, board, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/12/claim")
    page = with_login.get("/tasks/12", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert 'lang="zh-hans"' in page
    assert "【报名】: 12" in page


def test_offsite_next_is_not_followed(with_login, board, settings):
    settings.GITHUB_TOKEN = ""
    response = with_login.post("/github/tasks/12/claim", {"next": "https://evil.example/"})
    assert response["Location"] == "/"
