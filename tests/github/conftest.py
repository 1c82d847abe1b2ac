import urllib.error
import urllib.parse
import urllib.request

import pytest

from tracker.models import Task, TaskStatus

from .fake_github import FakeGitHub

LOCK_REASON = "output dtype类型不同，暂不要报名"


@pytest.fixture
def board(db):
    """183 tasks shaped like the tracking issue's: 155–180 locked, the rest claimable."""
    tasks = []
    for number in range(1, 184):
        locked = 155 <= number <= 180
        tasks.append(Task(number=number, api=f"paddle.api_{number}", kernel="GPU" if number % 2 == 0 else "CPU",
                          locked_reason=LOCK_REASON if locked else "",
                          status=TaskStatus.LOCKED if locked else TaskStatus.OPEN))
    Task.objects.bulk_create(tasks)
    return {t.number: t for t in Task.objects.all()}


@pytest.fixture
def fake_github():
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.fixture
def github_settings(settings, fake_github):
    settings.GITHUB_API_URL = fake_github.url
    settings.GITHUB_TOKEN = "ghs_test_token"
    settings.GITHUB_TRACKING_ISSUE = "PaddlePaddle/Paddle#72667"
    settings.GITHUB_PR_REPOS = ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"]
    settings.GITHUB_PR_TITLE_PREFIX = "Accuracy diff"
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot", "paddle-ci-bot", "github-actions[bot]"]
    return settings


@pytest.fixture
def oauth_settings(settings, fake_github):
    """Sign-in with GitHub talks to the fake GitHub (its OAuth app is registered there)."""
    settings.GITHUB_OAUTH_URL = fake_github.url
    settings.GITHUB_OAUTH_API_URL = fake_github.url
    settings.SOCIALACCOUNT_PROVIDERS = {"github": {
        "APP": {"client_id": fake_github.oauth_client_id, "secret": fake_github.oauth_client_secret}, "SCOPE": []}}
    return settings


def sign_in_with_github(client, fake, login: str, *, user_id: int = 4242, process: str = "login",
                        next_url: str = "/"):
    """The whole OAuth dance: the site sends the browser to GitHub's consent page, GitHub (the fake,
    over real HTTP) sends it back with a code, the site swaps the code for a token and reads /user.
    Returns the site's final answer to the callback."""
    fake.sign_in_as(login, user_id)
    start = client.post(f"/accounts/github/login/?process={process}&next={urllib.parse.quote(next_url)}")
    assert start.status_code == 302, start.content[:500]
    authorize = start["Location"]
    assert authorize.startswith(fake.url + "/login/oauth/authorize?"), authorize

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        urllib.request.build_opener(NoRedirect).open(authorize)
        raise AssertionError("GitHub's consent page did not redirect back")
    except urllib.error.HTTPError as answer:
        assert answer.code == 302, answer.read()
        callback = answer.headers["Location"]
    parts = urllib.parse.urlsplit(callback)
    assert parts.path == "/accounts/github/login/callback/", callback
    return client.get(f"{parts.path}?{parts.query}")
