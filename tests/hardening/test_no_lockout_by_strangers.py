"""A stranger who knows a staff account's name cannot lock it out: failed passwords count per (account,
client address) and per address, so the right password from an address without failures still signs in
while the stranger's address waits — through the real sign-in pages. And the names to guess with are
not shown: /runs says who requested a run to staff only."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from tracker.models import TestRun

from .test_staff_login import PASSWORD, THROTTLED, admin_login, fast_hashes, limits, signed_in, site_login, staff  # noqa: F401

pytestmark = pytest.mark.django_db

STRANGER, MAINTAINER = "198.51.100.66", "10.0.0.8"


def test_a_strangers_failures_never_lock_the_right_password_out_from_another_address(client, limits, staff):
    stranger = Client()
    for _ in range(5):
        assert site_login(stranger, "maint", "guess", address=STRANGER).status_code == 200
    # The stranger's address is throttled for this account, the right password included…
    assert site_login(stranger, "maint", PASSWORD, address=STRANGER).status_code == 429
    # …and keeps being refused however many more attempts it makes.
    for _ in range(10):
        assert site_login(stranger, "maint", "guess", address=STRANGER).status_code == 429
    # The maintainer, from an address with no failures, signs in on the site's and on the admin's login.
    answer = site_login(client, "maint", PASSWORD, address=MAINTAINER)
    assert answer.status_code == 302 and signed_in(client)
    admin = Client()
    answer = admin_login(admin, "maint", PASSWORD, address="10.0.0.9")
    assert answer.status_code == 302 and THROTTLED not in answer.content.decode() and signed_in(admin)


def test_failures_from_many_addresses_do_not_add_up_for_the_account(client, limits, staff):
    for i in range(12):  # twelve addresses, four failures each: 48 in all, never five from one address
        for _ in range(4):
            assert site_login(Client(), "maint", "guess", address=f"203.0.113.{i}").status_code == 200
    assert site_login(client, "maint", PASSWORD, address=MAINTAINER).status_code == 302


def test_the_address_limit_still_stops_one_address_guessing(limits, staff):
    guesser = Client()
    for i in range(20):
        assert site_login(guesser, f"user-{i}", "guess", address=STRANGER).status_code == 200
    answer = site_login(guesser, "maint", PASSWORD, address=STRANGER)
    assert answer.status_code == 429 and THROTTLED in answer.content.decode()


def test_who_requested_a_run_is_shown_to_staff_only(client, staff):
    TestRun.objects.create(scope={"kind": "tasks", "tasks": [1]}, lane="cpu", requested_by="maint")
    for visitor in (Client(), _signed_in_non_staff()):
        page = visitor.get("/runs").content.decode()
        assert "Requested by" in page and "maint" not in page
    client.force_login(staff)
    assert "<td>maint</td>" in client.get("/runs").content.decode()


def _signed_in_non_staff() -> Client:
    visitor = Client()
    visitor.force_login(User.objects.create_user("contributor", password=PASSWORD))
    return visitor


def test_who_cancelled_a_run_is_shown_to_staff_only(client, staff):
    run = TestRun.objects.create(scope={"kind": "tasks", "tasks": [1]}, lane="cpu", requested_by="maint")
    client.force_login(staff)
    assert client.post(f"/runs/{run.pk}/cancel").status_code == 302
    assert client.get(f"/api/runs/{run.pk}").json()["message"] == "cancelled by maint"
    assert "cancelled by maint" in client.get(f"/runs/{run.pk}").content.decode()
    for visitor in (Client(), _signed_in_non_staff()):
        assert visitor.get(f"/api/runs/{run.pk}").json()["message"] == "cancelled"
        page = visitor.get(f"/runs/{run.pk}").content.decode()
        assert "maint" not in page and "cancelled" in page
