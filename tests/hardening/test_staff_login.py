"""Staff password sign-in through the real pages (/accounts/login/, /admin/login/): failed passwords are
throttled per account and per address, the admin's login counts with the site's, password validators
refuse `a`, and password reset without mail is a clear 404, never a 500."""
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest
from django.contrib.auth.models import User
from django.test import Client

from .production import REPO

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
THROTTLED = "Too many failed sign-in attempts for this account or from this address."


@pytest.fixture(autouse=True)
def fast_hashes(settings):
    # PBKDF2's deliberate slowness (~0.5 s a check on this machine) is not what these tests are about.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def limits(settings):
    settings.LOGIN_FAILURES_PER_ACCOUNT, settings.LOGIN_FAILURES_PER_ADDRESS = 5, 20
    settings.LOGIN_FAILURE_WINDOW = 900
    return settings


@pytest.fixture
def staff(db):
    return User.objects.create_user("maint", password=PASSWORD, is_staff=True, is_superuser=True)


def site_login(client, username, password, address="127.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password, "next": "/admin/"},
                       REMOTE_ADDR=address)


def admin_login(client, username, password, address="127.0.0.1"):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password, "next": "/admin/"},
                       REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return client.get("/admin/").status_code == 200


def test_after_five_wrong_passwords_even_the_right_one_waits(client, limits, staff):
    for _ in range(5):
        answer = site_login(client, "maint", "guess")
        assert answer.status_code == 200 and "didn't match" in answer.content.decode()
    refused = site_login(client, "maint", PASSWORD)
    assert refused.status_code == 429
    page = refused.content.decode()
    assert THROTTLED in page
    assert 1 <= int(re.search(r"Try again in (\d+) minutes\.", page).group(1)) <= 15
    assert not signed_in(client)
    # The user name's case is no way around it.
    assert site_login(client, "MAINT", "guess").status_code == 429
    # Another account, from another address, is not affected.
    User.objects.create_user("other", password=PASSWORD, is_staff=True)
    other = Client()
    assert site_login(other, "other", PASSWORD, address="10.0.0.2").status_code == 302 and signed_in(other)


def test_successful_sign_ins_use_up_no_attempt(client, limits, staff):
    for _ in range(4):
        assert site_login(client, "maint", "guess").status_code == 200
    for _ in range(3):
        assert site_login(client, "maint", PASSWORD).status_code == 302
        client.logout()
    assert site_login(client, "maint", "guess").status_code == 200  # the fifth failure
    assert site_login(client, "maint", PASSWORD).status_code == 429


def test_one_address_guessing_many_accounts_is_stopped(client, limits, staff):
    for i in range(20):
        assert site_login(client, f"user-{i}", "guess", address="10.9.9.9").status_code == 200
    assert site_login(client, "maint", PASSWORD, address="10.9.9.9").status_code == 429
    assert site_login(Client(), "maint", PASSWORD, address="10.0.0.3").status_code == 302


def test_the_admin_login_is_throttled_and_counts_with_the_site_login(client, limits, staff):
    for _ in range(3):
        assert admin_login(client, "maint", "guess").status_code == 200
    for _ in range(2):
        assert site_login(client, "maint", "guess").status_code == 200
    answer = admin_login(client, "maint", PASSWORD)
    assert THROTTLED in answer.content.decode()
    assert not signed_in(client)
    fresh = Client()
    User.objects.create_user("second", password=PASSWORD, is_staff=True)
    assert admin_login(fresh, "second", PASSWORD, address="10.0.0.4").status_code == 302 and signed_in(fresh)


def test_password_change_refuses_a(client, staff):
    client.force_login(staff)
    answer = client.post("/admin/password_change/", {"old_password": PASSWORD, "new_password1": "a",
                                                     "new_password2": "a"})
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "This password is too short. It must contain at least 10 characters." in page
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD) and not staff.check_password("a")


def test_createsuperuser_refuses_a(tmp_path):
    """The real command on a terminal (it asks for the password through getpass)."""
    env = {**os.environ, "DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, check=True,
                   capture_output=True)
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "manage.py", "createsuperuser", "--username", "boss",
                                "--email", "boss@example.org"], cwd=REPO, env=env, stdin=follower, stdout=follower,
                               stderr=follower, start_new_session=True)
    os.close(follower)
    output = b""

    def read_until(text: bytes, timeout: float = 60) -> None:
        nonlocal output
        deadline = time.monotonic() + timeout
        while text not in output:
            assert time.monotonic() < deadline, output.decode(errors="replace")
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                try:
                    output += os.read(leader, 4096)
                except OSError:  # the command exited
                    break

    try:
        read_until(b"Password:")
        os.write(leader, b"a\n")
        read_until(b"Password (again):")
        os.write(leader, b"a\n")
        read_until(b"[y/N]")
        os.write(leader, b"N\n")
        read_until(b"Password:")  # asked again
    finally:
        process.kill()
        process.wait()
        os.close(leader)
    text = output.decode(errors="replace")
    assert "This password is too short. It must contain at least 10 characters." in text
    assert "Superuser created" not in text
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                           "from django.contrib.auth.models import User; print(User.objects.count())"],
                          cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "0"


@pytest.mark.parametrize("url", ["/accounts/password/reset/", "/accounts/password_reset/"])
def test_password_reset_without_mail_is_off_with_a_clear_page(client, settings, staff, url):
    settings.PASSWORD_RESET_ENABLED = False
    staff.email = "maint@example.org"
    staff.save()
    answer = client.post(url, {"email": "maint@example.org"})
    assert answer.status_code == 404
    assert "Password reset is off" in answer.content.decode()
    assert client.get(url).status_code == 404


def test_password_reset_with_mail_sends_the_link(client, settings, staff, mailoutbox):
    settings.PASSWORD_RESET_ENABLED = True
    staff.email = "maint@example.org"
    staff.save()
    answer = client.post("/accounts/password/reset/", {"email": "maint@example.org"})
    assert answer.status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["maint@example.org"]


def test_the_throttled_message_is_said_once(client, limits, staff):
    for _ in range(5):
        site_login(client, "maint", "guess")
    assert site_login(client, "maint", PASSWORD).content.decode().count(THROTTLED) == 1
    for _ in range(5):
        admin_login(Client(), "maint", "guess", address="10.0.0.7")
    assert admin_login(Client(), "maint", PASSWORD, address="10.0.0.7").content.decode().count(THROTTLED) == 1


def test_a_forwarded_for_shorter_than_the_proxy_count_is_counted_by_the_peer_address(client, limits, staff,
                                                                                       settings):
    # DJANGO_TRUSTED_PROXY_COUNT=2 but one X-Forwarded-For entry: allauth raises ImproperlyConfigured (a 500 on
    # every sign-in). The request did not pass every proxy the setting counts, so only its peer is trusted.
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 2
    for i in range(5):
        answer = client.post("/accounts/login/", {"username": "maint", "password": "guess"}, REMOTE_ADDR="10.1.1.1",
                             HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
        assert answer.status_code == 200 and "didn't match" in answer.content.decode()
    # The five failures counted against the peer 10.1.1.1, whatever the header claimed.
    settings.LOGIN_FAILURES_PER_ACCOUNT = 100
    for i in range(15):
        client.post("/accounts/login/", {"username": f"u{i}", "password": "guess"}, REMOTE_ADDR="10.1.1.1",
                    HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert client.post("/accounts/login/", {"username": "maint", "password": PASSWORD}, REMOTE_ADDR="10.1.1.1",
                       HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 429
    assert client.get("/accounts/login/", REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_FOR="x").status_code == 200
