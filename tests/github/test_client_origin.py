"""The GitHub token goes only to GITHUB_API_URL's origin: a Link rel="next" or a redirect naming another
origin is refused before anything is sent there; a plain-http API URL is refused unless it is loopback.

Two real HTTP servers on 127.0.0.1 (different ports): the API and a stand-in for whatever an answer names."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracker.github.client import GitHubClient, GitHubError, check_api_url, url_origin
from tracker.services.github_sync import sync_github
from tracker.models import SyncCursor

from . import payloads
from .fake_github import FakeGitHub

TOKEN = "ghs_secret_token_for_the_api_only"


@pytest.fixture
def elsewhere():
    server = FakeGitHub().start()
    yield server
    server.stop()


def comments(fake, n=3):
    for i in range(n):
        fake.add_comment(payloads.comment(2874900001 + i, "BeingGod", f"【报名】: {i + 1}", "2025-05-12T03:21:45Z"))


def test_a_next_link_to_another_origin_is_not_followed(fake_github, elsewhere):
    comments(fake_github)
    comments(elsewhere)
    fake_github.link_origin = elsewhere.url  # same host, another port
    client = GitHubClient(fake_github.url, TOKEN, max_wait=1)
    pages = client.get_pages("repos/PaddlePaddle/Paddle/issues/72667/comments", params={"per_page": 100})
    first = next(pages)
    assert first.status == 200 and len(first.data) == 2 and first.links["next"].startswith(elsewhere.url)
    with pytest.raises(GitHubError, match="refusing to follow a link off .*origin"):
        next(pages)
    assert elsewhere.requests == []  # never asked, so never saw the token
    assert [r["headers"]["authorization"] for r in fake_github.requests] == [f"Bearer {TOKEN}"]


def test_the_poller_stops_at_a_foreign_link_and_keeps_its_cursor(board, fake_github, elsewhere):
    comments(fake_github)
    fake_github.link_origin = elsewhere.url
    client = GitHubClient(fake_github.url, TOKEN, max_wait=1)
    with pytest.raises(GitHubError, match="refusing to follow"):
        sync_github(client, repo="PaddlePaddle/Paddle", issue=72667, pr_repos=[], prefix="Accuracy diff", pulls=False)
    assert elsewhere.requests == []
    cursor = SyncCursor.objects.get(key="comments:PaddlePaddle/Paddle#72667")
    assert cursor.since is None and cursor.etag == ""  # the next poll reads the resource again


def test_a_redirect_to_another_origin_is_not_followed(fake_github, elsewhere):
    path = "/repos/PaddlePaddle/Paddle/issues/72667/comments"
    fake_github.redirects[path] = elsewhere.url + path
    client = GitHubClient(fake_github.url, TOKEN, max_wait=1)
    with pytest.raises(GitHubError, match="refusing to follow a 302 redirect off"):
        client.get(path)
    assert elsewhere.requests == []


def test_a_redirect_within_the_origin_is_followed_with_the_token(fake_github):
    comments(fake_github, 1)
    fake_github.redirects["/repos/Old/Name/issues/72667/comments"] = \
        fake_github.url + "/repos/PaddlePaddle/Paddle/issues/72667/comments"
    answer = GitHubClient(fake_github.url, TOKEN).get("repos/Old/Name/issues/72667/comments")
    assert answer.status == 200 and len(answer.data) == 1
    assert fake_github.requests[-1]["headers"]["authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("url", ["https://api.github.com", "https://ghe.example.org/api/v3", "http://127.0.0.1:8123",
                                 "http://localhost:9000/api", "http://[::1]:8080", "HTTPS://API.GITHUB.COM"])
def test_https_or_loopback_api_urls_are_accepted(url):
    assert check_api_url(url) == url
    GitHubClient(url, TOKEN)


@pytest.mark.parametrize("url", ["http://api.github.com", "http://10.0.0.5:8080", "http://127.0.0.1.evil.org",
                                 "ftp://api.github.com", "api.github.com", ""])
def test_other_api_urls_are_refused_when_the_client_is_built(url):
    with pytest.raises(ValueError, match="GITHUB_API_URL"):
        GitHubClient(url, TOKEN)


def test_origins_compare_scheme_host_and_port():
    assert url_origin("https://API.github.com/x") == url_origin("https://api.github.com:443/y")
    assert url_origin("https://api.github.com") != url_origin("https://api.github.com:8443")
    assert url_origin("http://127.0.0.1:1") != url_origin("http://127.0.0.1:2")
    assert url_origin("http://api.github.com") != url_origin("https://api.github.com")


def test_the_settings_refuse_a_plain_http_api_url_at_start():
    env = {**os.environ, "DJANGO_DEBUG": "1", "GITHUB_API_URL": "http://api.example.org"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "manage.py", "check"], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode != 0
    assert "ImproperlyConfigured: GITHUB_API_URL='http://api.example.org' must use https" in done.stderr
