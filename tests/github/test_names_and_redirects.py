"""A site claim's `user:<site user name>` is shown to staff only (task page and /api/tasks/<n>); claim and
withdraw send the user back through the one redirect guard (a bare word or another site is never a
target, and never a 500 after the claim was stored) — through the real views, signed in through the fake
GitHub over real HTTP."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from tracker.models import Claim

from .test_site_claims import fresh_caches, with_login  # noqa: F401 (fixtures)


@pytest.fixture
def claimed(with_login, settings):
    settings.GITHUB_TOKEN = ""
    assert with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"}).status_code == 302
    claim = Claim.objects.get(task__number=12)
    assert claim.source_ref.startswith("user:")
    return claim


def test_the_site_user_name_is_shown_to_staff_only(claimed, with_login):
    site_user = claimed.source_ref
    staff = Client()
    staff.force_login(User.objects.create_user("maint", is_staff=True))
    for visitor, sees in ((Client(), False), (with_login, False), (staff, True)):
        api = visitor.get("/api/tasks/12").json()
        [claim] = api["claims"]
        assert claim["login"] == "ooooo-create"  # the GitHub login is public; the site's user name is not
        assert (claim["source_ref"] == site_user) is sees and (claim["source_ref"] == "") is not sees
        page = visitor.get("/tasks/12").content.decode()
        assert (site_user in page) is sees, visitor


@pytest.mark.parametrize("action", ["claim", "withdraw"])
@pytest.mark.parametrize("target, form, referer", [
    ("/", {"next": "x"}, None),                        # a bare word: redirect() took it for a URL name (500)
    ("/", {"next": "board"}, None),
    ("/", {}, "board"),                                # the same through Referer
    ("/", {"next": " 1 "}, None),
    ("/", {"next": "//evil.example/tasks"}, None),
    ("/", {"next": "https://evil.example/"}, "https://evil.example/"),
    ("/", {"next": "javascript:alert(1)"}, None),
    ("/tasks/12?page=2", {"next": "/tasks/12?page=2"}, None),
    ("http://testserver/tasks/12", {}, "http://testserver/tasks/12"),
])
def test_claim_and_withdraw_redirect_only_to_pages_of_this_site(with_login, settings, action, target, form, referer):
    settings.GITHUB_TOKEN = ""
    if action == "withdraw":
        with_login.post("/github/tasks/12/claim", {"next": "/tasks/12"})
    headers = {"HTTP_REFERER": referer} if referer else {}
    answer = with_login.post(f"/github/tasks/12/{action}", form, **headers)
    assert answer.status_code == 302 and answer["Location"] == target
    claim = Claim.objects.get(task__number=12)
    assert (claim.withdrawn_at is not None) is (action == "withdraw")
    assert with_login.get(answer["Location"] if target.startswith("/") else "/tasks/12").status_code == 200
