"""Pages rendered once per data version: a write shows at once, ETags revalidate, CSRF stays per visitor."""
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.github import payloads
from tracker.models import ConfigResult, FailingConfig, Task, TestRun
from tracker.services import latest
from tracker.services.claims import apply_comment
from tracker.web.conditional import CSRF_PLACEHOLDER

pytestmark = pytest.mark.django_db


@pytest.fixture
def tasks(settings):
    settings.GITHUB_TRACKING_ISSUE = "PaddlePaddle/Paddle#72667"
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot"]
    return [Task.objects.create(number=n, api=f"paddle.cached_{n}", kernel="CPU") for n in (1, 2, 3)]


def claim(number: int, login: str, comment_id: int):
    apply_comment(payloads.comment(comment_id, login, f"【报名】: {number}", "2025-05-12T03:21:45Z"))


@pytest.mark.parametrize("url", ["/", "/tasks/2", "/api/tasks"])
def test_a_write_shows_at_once_and_etags_revalidate(client, tasks, url):
    client.get(url)  # the first visit sets the CSRF cookie, which the page's ETag covers
    first = client.get(url)
    etag = first["ETag"]
    assert first.status_code == 200 and "@newcomer" not in first.content.decode() and "newcomer" not in first.content.decode()
    again = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag and again.content == b""
    claim(2, "newcomer", 2_874_700_901)
    changed = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert "newcomer" in changed.content.decode()


def test_a_new_result_changes_the_task_page(client, tasks):
    config = FailingConfig.objects.create(task=tasks[1], config='paddle.cached_2(Tensor([2],"float32"), )',
                                          config_hash="cached-2", origin_file="t", category="accuracy")
    client.get("/tasks/2")
    etag = client.get("/tasks/2")["ETag"]
    assert client.get("/tasks/2", HTTP_IF_NONE_MATCH=etag).status_code == 304
    run = TestRun.objects.create(scope={"kind": "task", "tasks": [2]}, state=TestRun.State.DONE, total=1, done=1,
                                 paddle_version="3.3.1")
    ConfigResult.objects.create(run=run, failing_config=config, task=tasks[1], status="accuracy_error",
                                direction="forward", max_abs=1.0, max_rel=0.5)
    latest.rebuild([config.pk])
    page = client.get("/tasks/2", HTTP_IF_NONE_MATCH=etag)
    assert page.status_code == 200 and "accuracy_error" in page.content.decode()
    # Another task's page is unaffected by this task's results.
    client.get("/tasks/3")
    other = client.get("/tasks/3")
    assert client.get("/tasks/3", HTTP_IF_NONE_MATCH=other["ETag"]).status_code == 304


def csrf_from(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def test_anonymous_visitors_share_the_rendering_but_each_gets_a_working_csrf_token(tasks):
    alice, bob = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    page_a, page_b = alice.get("/"), bob.get("/")
    token_a, token_b = csrf_from(page_a.content.decode()), csrf_from(page_b.content.decode())
    assert alice.cookies["csrftoken"].value != bob.cookies["csrftoken"].value
    assert CSRF_PLACEHOLDER not in page_a.content.decode()
    # Each visitor's token works with their own cookie (the language switch is a POST form).
    assert alice.post("/i18n/setlang/", {"language": "zh-hans", "next": "/", "csrfmiddlewaretoken": token_a}).status_code == 302
    assert bob.post("/i18n/setlang/", {"language": "en", "next": "/", "csrfmiddlewaretoken": token_b}).status_code == 302
    assert "任务" in alice.get("/").content.decode()  # and the language is part of the cache key
    assert "tasks shown" in bob.get("/").content.decode()


def test_a_signed_in_user_gets_their_own_page(client, tasks):
    client.get("/")  # the anonymous rendering is in the cache
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))
    response = client.get("/")
    page = response.content.decode()
    assert "maint" in page and "Re-test all open CPU tasks" in page
    assert not response.has_header("ETag")  # session state on the page: never answered with a 304
    assert "Re-test all open CPU tasks" not in Client().get("/").content.decode()
