"""Issue 45 item 6: password change is throttled like sign-in (Django's /accounts/password_change/, allauth's
/accounts/password/change/ and the admin's /admin/password_change/), and no account gains a password on the site —
a GitHub-only account has none to change and allauth's /accounts/password/set/ is off. Through the real pages."""
import pytest
from django.contrib.auth.models import User

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
NEW = "a new and long enough passphrase 42"
THROTTLED = "Too many wrong passwords for this account or from this address."
CHANGE_PAGES = ["/accounts/password_change/", "/accounts/password/change/", "/admin/password_change/"]


@pytest.fixture(autouse=True)
def fast_hashes(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.LOGIN_FAILURES_PER_ACCOUNT, settings.LOGIN_FAILURES_PER_ADDRESS, settings.LOGIN_FAILURE_WINDOW = 3, 20, 900


@pytest.fixture
def staff(client):
    user = User.objects.create_user("maint", password=PASSWORD, is_staff=True, is_superuser=True)
    client.force_login(user)
    return user


def change(client, page, old, new=NEW, address="127.0.0.1"):
    return client.post(page, {"old_password": old, "new_password1": new, "new_password2": new}, REMOTE_ADDR=address)


@pytest.mark.parametrize("page", CHANGE_PAGES)
def test_wrong_current_passwords_are_throttled_and_then_even_the_right_one_waits(client, staff, page):
    for attempt in range(3):
        response = change(client, page, f"guess {attempt}")
        assert response.status_code == 200 and THROTTLED not in response.content.decode()
    throttled = change(client, page, "guess 4")
    assert throttled.status_code == 429 and THROTTLED in throttled.content.decode()
    right_but_throttled = change(client, page, PASSWORD)
    assert right_but_throttled.status_code == 429
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD) and not staff.check_password(NEW)  # nothing changed


def test_the_pages_count_together_and_a_right_password_changes_it(client, staff):
    change(client, CHANGE_PAGES[0], "guess 1")
    change(client, CHANGE_PAGES[1], "guess 2")
    done = change(client, CHANGE_PAGES[2], PASSWORD)
    assert done.status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(NEW)
    # the right password gave its slot back: two failures are left in the window, the third is refused
    assert change(client, CHANGE_PAGES[0], "guess 3").status_code == 200
    assert change(client, CHANGE_PAGES[0], "guess 4").status_code == 429


def test_a_github_only_account_has_no_password_and_gains_none(client):
    user = User.objects.create_user("BeingGod")
    user.set_unusable_password()
    user.save()
    client.force_login(user)
    for page in CHANGE_PAGES[:2]:
        assert client.get(page).status_code == 403
        refused = change(client, page, "", new=NEW)
        assert refused.status_code == 403 and "signs in with GitHub" in refused.content.decode()
    for method in (client.get, client.post):
        assert method("/accounts/password/set/", {"password1": NEW, "password2": NEW}).status_code == 404
    user.refresh_from_db()
    assert not user.has_usable_password()
    assert client.get("/admin/password_change/").status_code == 302  # not staff: the admin sends it to its login


def test_a_visitor_is_sent_to_sign_in(client):
    response = client.get(CHANGE_PAGES[0])
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
