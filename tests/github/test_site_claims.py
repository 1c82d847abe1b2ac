"""Claiming on the site: sign-in through GitHub OAuth (against a fake GitHub over real HTTP), one-click
claim/withdraw for the proven login, posting `(for @login)` comments or showing the comment, rate limit."""
import json
import time

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import call_command

from tracker.web.conditional import page_cache
from tracker.models import Claim, Contributor, Event, IssueComment
from tracker.services.claims import apply_comment

from . import payloads
from .conftest import sign_in_with_github


@pytest.fixture(autouse=True)
def fresh_caches(db):
    # The per-user counters live in the shared (database) cache; the anonymous pages rendered under one
    # test's settings (sign-in configured or not) in the page cache.
    for each in (cache, page_cache):
        each.clear()
    yield
    for each in (cache, page_cache):
        each.clear()


@pytest.fixture
def with_login(client, board, oauth_settings, fake_github):
    """A browser signed in to the site through GitHub as ooooo-create."""
    answer = sign_in_with_github(client, fake_github, "ooooo-create", next_url="/tasks/12")
    assert answer.status_code == 302 and answer["Location"] == "/tasks/12"
    return client


@pytest.fixture
def password_user(client, board):
    user = get_user_model().objects.create_user("alice", password="pw-alice")
    client.force_login(user)
    return user


def posted_bodies(fake):
    return [json.loads(r["body"])["body"] for r in fake.requests if r["method"] == "POST" and "/issues/" in r["path"]]


# --- sign-in through GitHub ------------------------------------------------------------------

def test_without_an_oauth_app_the_page_says_sign_in_is_not_configured(client, board, settings):
    settings.SOCIALACCOUNT_PROVIDERS = {"github": {"APP": {"client_id": "", "secret": ""}}}
    page = client.get("/tasks/12").content.decode()
    assert "Sign-in with GitHub is not configured on this site" in page
    assert "/accounts/github/login/" not in page and "【报名】: 12" in page


def test_anonymous_task_page_offers_github_sign_in_and_the_comment_to_write(client, board, oauth_settings):
    page = client.get("/tasks/12").content.decode()
    assert "【报名】: 12" in page and "(for @" not in page
    assert "https://github.com/PaddlePaddle/Paddle/issues/72667" in page
    assert 'action="/accounts/github/login/?process=login' in page and "Sign in with GitHub" in page
    response = client.post("/github/tasks/12/claim")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not Claim.objects.exists()
    assert "使用 GitHub 登录" in client.get("/tasks/12", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()


def test_sign_in_through_github_proves_the_login(client, board, oauth_settings, fake_github):
    answer = sign_in_with_github(client, fake_github, "ooooo-create", user_id=86523, next_url="/tasks/12")
    assert answer.status_code == 302 and answer["Location"] == "/tasks/12"
    # The site went to GitHub's consent page, swapped the code for a token and read /user with it.
    steps = [(r["method"], r["path"]) for r in fake_github.requests]
    assert steps == [("GET", "/login/oauth/authorize"), ("POST", "/login/oauth/access_token"), ("GET", "/user")]
    authorize = fake_github.requests[0]["query"]
    assert authorize["client_id"] == [fake_github.oauth_client_id]
    assert authorize["redirect_uri"] == ["http://testserver/accounts/github/login/callback/"]
    assert fake_github.requests[2]["headers"]["authorization"].startswith("token gho_")
    account = SocialAccount.objects.get(provider="github")
    assert account.uid == "86523" and account.extra_data["login"] == "ooooo-create"
    page = client.get("/github/profile").content.decode()
    assert "Signed in with GitHub as <strong>@ooooo-create</strong>" in page
    assert Contributor.objects.get(login="ooooo-create").user == account.user
    task_page = client.get("/tasks/12").content.decode()
    assert "Claim as @ooooo-create" in task_page


def test_sign_in_with_a_wrong_client_secret_signs_nobody_in(client, board, oauth_settings, fake_github):
    oauth_settings.SOCIALACCOUNT_PROVIDERS = {"github": {
        "APP": {"client_id": fake_github.oauth_client_id, "secret": "not-the-secret"}, "SCOPE": []}}
    answer = sign_in_with_github(client, fake_github, "ooooo-create")
    assert answer.status_code == 401 and b"Third-Party Login Failure" in answer.content
    assert not SocialAccount.objects.exists() and not get_user_model().objects.exists()
    assert client.post("/github/tasks/12/claim").status_code == 302
    assert not Claim.objects.exists()


def test_a_signed_in_user_without_github_cannot_claim(client, password_user, oauth_settings, settings):
    settings.GITHUB_TOKEN = ""
    client.post("/github/tasks/12/claim")
    assert not Claim.objects.exists()
    page = client.get("/tasks/12").content.decode()
    assert "Sign in with GitHub before claiming" in page
    assert 'action="/accounts/github/login/?process=connect' in page


def test_a_typed_in_login_is_never_a_claim_identity(client, password_user, settings):
    """The old free-text link (any user could name any login) claims nothing and the form is gone."""
    settings.GITHUB_TOKEN = ""
    Contributor.objects.create(login="co63oc", user=password_user)  # linked before OAuth existed
    client.post("/github/profile", {"github_login": "co63oc"})
    client.post("/github/tasks/12/claim")
    assert not Claim.objects.exists()
    assert 'name="github_login"' not in client.get("/github/profile").content.decode()


def test_connecting_github_to_a_password_account_then_claiming(client, password_user, oauth_settings, fake_github,
                                                              settings):
    settings.GITHUB_TOKEN = ""
    answer = sign_in_with_github(client, fake_github, "NKNaN", process="connect", next_url="/github/profile")
    assert answer.status_code == 302
    assert SocialAccount.objects.get(provider="github").user == password_user
    client.post("/github/tasks/25/claim")
    claim = Claim.objects.get(task__number=25)
    assert claim.contributor.login == "NKNaN" and claim.contributor.user == password_user


def test_the_proven_login_takes_over_an_unproven_link_and_keeps_the_claims(client, board, oauth_settings,
                                                                           fake_github, settings):
    settings.GITHUB_BOT_ACCOUNTS = []
    apply_comment(payloads.comment(1, "NKNaN", "【报名】: 25", "2025-05-12T00:00:00Z"))
    squatter = get_user_model().objects.create_user("mallory")
    Contributor.objects.filter(login="NKNaN").update(user=squatter)  # typed in on the old profile form
    sign_in_with_github(client, fake_github, "nknan")  # GitHub logins are case-insensitive
    contributor = Contributor.objects.get(login="NKNaN")
    assert contributor.user.socialaccount_set.get().extra_data["login"] == "nknan"
    assert Contributor.objects.count() == 1
    assert "paddle.api_25" in client.get("/github/profile").content.decode()


# --- claiming and the comment on the tracking issue -------------------------------------------

def test_claim_without_token_shows_the_exact_comment(with_login, settings, fake_github):
    settings.GITHUB_TOKEN = ""
    before = len(fake_github.requests)
    response = with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    assert response.status_code == 302 and response["Location"] == "/tasks/12"
    claim = Claim.objects.get(task__number=12)
    assert claim.contributor.login == "ooooo-create" and claim.source == "web"
    assert claim.source_ref.startswith("user:")
    event = Event.objects.get(task__number=12, kind="claimed")
    assert event.source == "web" and event.actor == "ooooo-create"
    page = with_login.get("/tasks/12").content.decode()
    assert "paste this comment" in page and "【报名】: 12" in page and "(for @" not in page  # they post it themselves
    assert "Withdraw" in page
    assert len(fake_github.requests) == before  # nothing was sent to GitHub


def test_claim_with_token_posts_for_whom_and_a_full_sync_credits_that_login(with_login, github_settings,
                                                                           fake_github):
    fake_github.token_login = "board-poster"
    github_settings.GITHUB_BOT_LOGIN = ""  # the site learns its account from GET /user
    with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    posts = [r for r in fake_github.requests if r["method"] == "POST" and "/issues/" in r["path"]]
    assert len(posts) == 1
    assert posts[0]["path"] == "/repos/PaddlePaddle/Paddle/issues/72667/comments"
    assert json.loads(posts[0]["body"]) == {"body": "【报名】: 12 (for @ooooo-create)"}
    assert posts[0]["headers"]["authorization"] == "Bearer ghs_test_token"
    posted = Event.objects.get(kind="comment_posted", task__number=12)
    assert posted.source_ref.startswith("https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-")
    assert "paste this comment" not in with_login.get("/tasks/12").content.decode()
    # The webhook / poller echo of the posted comment changes nothing.
    echo = fake_github.comments[("PaddlePaddle/Paddle", 72667)][0]
    assert apply_comment(echo).skipped == "unchanged"
    assert list(Claim.objects.values_list("contributor__login", flat=True)) == ["ooooo-create"]
    # A board rebuilt from GitHub alone (`sync_github --full` on an empty history) credits the same person,
    # not the token's account.
    Claim.objects.all().delete()
    IssueComment.objects.all().delete()
    call_command("sync_github", "--full", "--no-pulls")
    claim = Claim.objects.get(task__number=12)
    assert claim.contributor.login == "ooooo-create" and claim.source == "comment"
    assert not Claim.objects.filter(contributor__login="board-poster").exists()


def test_withdraw_with_token_posts_the_withdrawal_for_whom(with_login, github_settings, fake_github):
    github_settings.GITHUB_BOT_LOGIN = "paddle-bot"
    with_login.post("/github/tasks/12/claim")
    with_login.post("/github/tasks/12/withdraw")
    assert posted_bodies(fake_github) == ["【报名】: 12 (for @ooooo-create)", "【取消报名】: 12 (for @ooooo-create)"]
    assert Claim.objects.get(task__number=12).withdrawn_at is not None
    assert Event.objects.filter(task__number=12, kind="withdrawn", source="web").exists()
    # Replayed from GitHub (the poller sees both comments): still withdrawn, nothing new.
    for echo in fake_github.comments[("PaddlePaddle/Paddle", 72667)]:
        assert apply_comment(echo).skipped == "unchanged"


def test_failed_post_keeps_the_claim_and_shows_the_comment(with_login, github_settings, fake_github):
    # e.g. the token lacks permission
    fake_github.rate_limits.append({"status": 403, "headers": {}, "message": "Resource not accessible by integration"})
    with_login.post("/github/tasks/12/claim")
    assert Claim.objects.filter(task__number=12, withdrawn_at__isnull=True).exists()
    page = with_login.get("/tasks/12").content.decode()
    assert "paste this comment" in page and "【报名】: 12" in page


def test_locked_task_cannot_be_claimed(with_login, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/160/claim")
    assert not Claim.objects.exists()
    page = with_login.get("/tasks/160").content.decode()
    assert "暂不要报名" in page
    assert "/github/tasks/160/claim" not in page


def test_claiming_twice_is_one_claim(with_login, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/12/claim")
    with_login.post("/github/tasks/12/claim")
    assert Claim.objects.count() == 1
    assert Event.objects.filter(kind="claimed").count() == 1


def test_claim_page_in_chinese(with_login, settings):
    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/12/claim")
    page = with_login.get("/tasks/12", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert 'lang="zh-hans"' in page
    assert "【报名】: 12" in page


def test_offsite_next_is_not_followed(with_login, settings):
    settings.GITHUB_TOKEN = ""
    response = with_login.post("/github/tasks/12/claim", {"next": "https://evil.example/"})
    assert response["Location"] == "/"


# --- rate limit -------------------------------------------------------------------------------

def test_claims_and_withdrawals_beyond_the_rate_limit_answer_429(with_login, settings, fake_github):
    settings.GITHUB_TOKEN = ""
    settings.SITE_CLAIM_RATE_LIMIT, settings.SITE_CLAIM_RATE_WINDOW = 3, 3600
    for path in ("/github/tasks/12/claim", "/github/tasks/12/withdraw", "/github/tasks/13/claim"):
        assert with_login.post(path).status_code == 302
    refused = with_login.post("/github/tasks/14/claim")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert "Too many claims and withdrawals: at most 3 per 60 minutes." in refused.content.decode()
    assert not Claim.objects.filter(task__number=14).exists()
    assert with_login.post("/github/tasks/13/withdraw").status_code == 429
    assert Claim.objects.get(task__number=13).withdrawn_at is None
    # Someone else is counted on their own.
    other = type(with_login)()
    sign_in_with_github(other, fake_github, "NKNaN", user_id=5151)
    assert other.post("/github/tasks/25/claim").status_code == 302
    assert Claim.objects.get(task__number=25).contributor.login == "NKNaN"


@pytest.mark.parametrize("fault", ["hang", "stall", "reset", "not-json"])
def test_a_github_that_hangs_or_breaks_keeps_the_claim_and_tells_the_user_to_paste(with_login, github_settings,
                                                                                   fake_github, fault):
    """Posting the comment fails within GITHUB_API_TIMEOUT however GitHub fails: the claim is stored, the page
    answers (no 500) and says to paste the comment."""
    github_settings.GITHUB_BOT_LOGIN = "paddle-bot"
    github_settings.GITHUB_API_TIMEOUT = 0.3
    fake_github.fault_seconds = 2.0
    fake_github.faults["/repos/PaddlePaddle/Paddle/issues/72667/comments"] = fault
    started = time.monotonic()
    response = with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    assert response.status_code == 302 and response["Location"] == "/tasks/12"
    assert time.monotonic() - started < 1.5
    assert posted_bodies(fake_github) == ["【报名】: 12 (for @ooooo-create)"]  # it was tried
    assert Claim.objects.filter(task__number=12, contributor__login="ooooo-create", withdrawn_at__isnull=True).exists()
    assert not Event.objects.filter(kind="comment_posted").exists()
    page = with_login.get("/tasks/12").content.decode()
    why = "is not JSON" if fault == "not-json" else "cannot reach GitHub"
    assert "Posting the comment on GitHub failed" in page and why in page
    assert "paste this comment" in page and "【报名】: 12" in page and "(for @" not in page


# --- the claim panel is a selector the task page's view calls (issue 42) -------------------------

def test_the_claim_panel_is_read_by_a_selector_and_the_partial_runs_no_query(with_login, settings, rf):
    from django.db import connection
    from django.template.loader import render_to_string
    from django.test.utils import CaptureQueriesContext

    from tracker.models import Task
    from tracker.selectors.claims import task_claim_state

    settings.GITHUB_TOKEN = ""
    with_login.post("/github/tasks/12/claim")
    user = get_user_model().objects.get(socialaccount__provider="github")
    task = Task.objects.get(number=12)
    pasted = with_login.session["github_comment_to_paste"]
    state = task_claim_state(task, user, pasted)
    assert (state.signed_in, state.login, state.can_withdraw, state.can_claim) == (True, "ooooo-create", True, False)
    assert state.claim == Claim.objects.get(task=task, withdrawn_at__isnull=True)
    assert state.comment_to_paste == "【报名】: 12" and state.posted_claim_comment == "【报名】: 12 (for @ooooo-create)"
    # The note of a comment to paste belongs to its own task's page only; an anonymous viewer has no claim.
    other = Task.objects.exclude(number=12).first()
    assert task_claim_state(other, user, pasted).comment_to_paste == ""
    anonymous = task_claim_state(task, type("Anonymous", (), {"is_authenticated": False})(), pasted)
    assert (anonymous.signed_in, anonymous.claim, anonymous.comment_to_paste) == (False, None, "")
    request = rf.get("/tasks/12")
    request.user = user
    with CaptureQueriesContext(connection) as queries:
        html = render_to_string("tracker/partials/task_claim.html", {"task": task, "claim_state": state,
                                                                     "request": request})
    assert [q["sql"] for q in queries.captured_queries] == []
    assert 'class="withdraw"' in html and "【报名】: 12" in html
