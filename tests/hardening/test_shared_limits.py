"""Limits hold across web processes: scripts/serve.sh's gunicorn with 2 workers and the production
environment, hit concurrently. The site-claim limit and the failed-sign-in limit count in the shared
(database) cache, so exactly the limit gets through, whichever worker answers; password reset without
a mail server is a clear 404 instead of a 500."""
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from . import concurrency as cc
from .servers import Served

CLAIM_LIMIT = 20
LOGIN_LIMIT = 5
PASSWORD = "correct horse battery staple"

SEED = """
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from tracker.models import Task
import json
Task.objects.bulk_create([Task(number=n, api=f"paddle.api_{n}", kernel="CPU") for n in range(1, 11)])
user = User.objects.create_user("claimer")
SocialAccount.objects.create(user=user, provider="github", uid="700001", extra_data={"login": "claimer-gh", "id": 700001})
User.objects.create_user("maint", password=%(password)r, is_staff=True, is_superuser=True)
session = SessionStore()
session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(json.dumps({"session": session.session_key}))
"""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browser:
    """One visitor of the served site over HTTPS (as the TLS proxy forwards it): cookies and CSRF."""

    def __init__(self, server: Served, cookies: dict | None = None):
        self.server, self.cookies = server, dict(cookies or {})
        self.origin = f"https://127.0.0.1:{server.port}"

    def request(self, path: str, form: dict | None = None):
        headers = {"X-Forwarded-Proto": "https", "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        data = None
        if form is not None:
            headers.update({"Origin": self.origin, "Referer": self.origin + path,
                            "Content-Type": "application/x-www-form-urlencoded"})
            data = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": self.csrf}).encode()
        request = urllib.request.Request(self.server.url + path, data=data, headers=headers)
        try:
            with urllib.request.build_opener(NoRedirect).open(request, timeout=120) as answer:
                return answer.status, answer.headers, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode()

    def visit(self, path: str) -> "Browser":
        status, headers, page = self.request(path)
        assert status == 200, page[:500]
        for cookie in headers.get_all("Set-Cookie") or []:
            name, _, rest = cookie.partition("=")
            self.cookies[name] = rest.split(";", 1)[0]
        self.csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        return self


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("limits")
    access_log = workdir / "access.log"
    server = Served(workdir, workers=2, threads=8, extra_env={
        "SITE_CLAIM_RATE_LIMIT": str(CLAIM_LIMIT), "SITE_CLAIM_RATE_WINDOW": "3600", "GITHUB_TOKEN": "",
        "LOGIN_FAILURES_PER_ACCOUNT": str(LOGIN_LIMIT), "LOGIN_FAILURES_PER_ADDRESS": "100",
        "WEB_ACCESS_LOG": str(access_log), "GUNICORN_CMD_ARGS": "--access-logformat='%(p)s %(s)s %(m)s %(U)s'"})
    try:
        server.wait_ready()
        server.seed = json.loads(cc.shell(server.env, SEED % {"password": PASSWORD}).strip().splitlines()[-1])
        server.access_log = access_log
        yield server
    finally:
        server.stop()


def workers_that_answered(server: Served, method: str, path_part: str) -> set[str]:
    lines = server.access_log.read_text().splitlines()
    return {line.split()[0] for line in lines if f" {method} " in line and path_part in line}


def test_fifty_concurrent_claims_and_withdrawals_get_exactly_the_limit(served):
    browser = Browser(served, {"sessionid": served.seed["session"]}).visit("/tasks/1")
    paths = [f"/github/tasks/{1 + i // 2 % 10}/{'claim' if i % 2 == 0 else 'withdraw'}" for i in range(50)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        statuses = list(pool.map(lambda path: browser.request(path, {})[0], paths))
    assert sorted(set(statuses)) == [302, 429], statuses
    assert statuses.count(302) == CLAIM_LIMIT and statuses.count(429) == 50 - CLAIM_LIMIT
    assert len(workers_that_answered(served, "POST", "/github/tasks/")) == 2  # both processes took part


def test_concurrent_wrong_passwords_count_once_across_workers(served):
    visitors = [Browser(served).visit("/accounts/login/") for _ in range(12)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda b: b.request("/accounts/login/", {"username": "maint", "password": "guess",
                                                                          "next": "/admin/"}), visitors))
    statuses = [status for status, _, _ in answers]
    assert statuses.count(200) == LOGIN_LIMIT and statuses.count(429) == 12 - LOGIN_LIMIT, statuses
    assert all("didn't match" in page for status, _, page in answers if status == 200)
    # The right password now waits too, on the site's login and on the admin's.
    right = Browser(served).visit("/accounts/login/")
    status, _, page = right.request("/accounts/login/", {"username": "maint", "password": PASSWORD, "next": "/admin/"})
    assert status == 429 and "Too many failed sign-in attempts" in page
    admin = Browser(served).visit("/admin/login/")
    status, _, page = admin.request("/admin/login/", {"username": "maint", "password": PASSWORD, "next": "/admin/"})
    assert status == 200 and "Too many failed sign-in attempts" in page
    assert "sessionid" not in admin.cookies


@pytest.mark.parametrize("path", ["/accounts/password/reset/", "/accounts/password_reset/"])
def test_password_reset_without_a_mail_server_is_a_clear_404(served, path):
    browser = Browser(served).visit("/accounts/login/")
    status, _, page = browser.request(path, {"email": "nobody@example.org"})
    assert status == 404 and "Password reset is off" in page
