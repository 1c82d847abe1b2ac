"""WEB_STALE_SECONDS (issue #45, cold reads): when a page's data just moved, an anonymous visitor is answered at once
with the page's previous rendering — marked `X-Board-Rendering: previous`, with its Age and no ETag — and the new
rendering is computed once that answer is sent; the next visitor gets it. A signed-in user always gets the new one,
a previous rendering older than the window is never served, one such computation runs per process at a time, and one
that fails leaves the previous rendering in place and is logged.

With WEB_SHARED_RENDERINGS, a page is rendered by one process for all (the others read it, or wait for it), and
one process's previous rendering answers in another. The page cache and the wall clock are the test's (the window is
exact); the last test runs scripts/serve.sh with two workers, whose front must send the answer before its close()
computes the next rendering, as Django's test client does."""
import sqlite3
import time
import urllib.request

import pytest
from django.core.cache import caches

from tests.factories import make_task
from tests.hardening.test_public_reads import a_passing_run, configs_of, history
from tracker.models import Contributor
from tracker.web import conditional

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(settings, monkeypatch):
    settings.WEB_STALE_SECONDS = 60
    now = [10_000.0]
    monkeypatch.setattr(conditional, "_wall_clock", lambda: now[0])
    caches["pages"].clear()
    made = make_task(7, configs=configs_of(7))
    history(made, 1)
    made.now = now
    return made


def kind(response) -> str:
    return response.json()["retest"]["verification"]["kind"]


def test_after_a_write_the_next_visitor_gets_the_previous_rendering_and_the_one_after_the_new(client, task):
    first = client.get("/api/tasks/7")
    assert kind(first) != "verified" and "X-Board-Rendering" not in first and first.has_header("ETag")
    a_passing_run(task)
    task.now[0] += 5
    previous = client.get("/api/tasks/7")
    assert previous.status_code == 200 and kind(previous) == kind(first)  # the rendering from before the write
    assert previous["X-Board-Rendering"] == "previous" and previous["Age"] == "5"
    assert not previous.has_header("ETag")  # a browser must not keep it as the new version's page
    assert "no-cache" in previous["Cache-Control"]
    fresh = client.get("/api/tasks/7")  # computed after the previous answer was sent (the test client closes it)
    assert kind(fresh) == "verified" and "X-Board-Rendering" not in fresh and fresh.has_header("ETag")


def test_a_signed_in_user_never_gets_a_previous_rendering(admin_client, client, task):
    client.get("/api/tasks/7")
    a_passing_run(task)
    answer = admin_client.get("/api/tasks/7")
    assert kind(answer) == "verified" and "X-Board-Rendering" not in answer


def test_a_previous_rendering_older_than_the_window_is_not_served(client, task, settings):
    client.get("/api/tasks/7")
    a_passing_run(task)
    task.now[0] += settings.WEB_STALE_SECONDS + 1
    answer = client.get("/api/tasks/7")
    assert kind(answer) == "verified" and "X-Board-Rendering" not in answer


def test_off_by_default_a_write_shows_on_the_next_read(client, task, settings):
    settings.WEB_STALE_SECONDS = 0
    client.get("/api/tasks/7")
    a_passing_run(task)
    assert kind(client.get("/api/tasks/7")) == "verified"


@pytest.mark.parametrize("url", ["/", "/tasks/7", "/charts/overview"])
def test_html_pages_answer_their_previous_rendering_with_the_visitors_own_csrf_token(client, task, url):
    client.get(url)
    Contributor.objects.create(login="newcomer")  # the board's and the site's version move
    a_passing_run(task)  # the task's
    previous = client.get(url)
    assert previous["X-Board-Rendering"] == "previous", url
    body = previous.content.decode()
    assert conditional.CSRF_PLACEHOLDER not in body and "newcomer" not in body
    assert 'class="rendering-note"' in body and "computed 0 s ago" in body  # the page says what it is
    fresh = client.get(url)
    assert "X-Board-Rendering" not in fresh and 'class="rendering-note"' not in fresh.content.decode()
    if url == "/":
        assert "newcomer" in fresh.content.decode()  # the board's contributor filter lists the new login


def test_one_rendering_is_computed_after_answers_at_a_time(client, task):
    client.get("/api/tasks/7")
    a_passing_run(task)
    assert conditional._refreshing.acquire(blocking=False)  # another page's computation is running
    try:
        assert client.get("/api/tasks/7")["X-Board-Rendering"] == "previous"
        second = client.get("/api/tasks/7")  # nothing was computed after the first answer
        assert second["X-Board-Rendering"] == "previous" and kind(second) != "verified"
    finally:
        conditional._refreshing.release()
    client.get("/api/tasks/7")  # this one's close computes it
    assert kind(client.get("/api/tasks/7")) == "verified"


def test_a_failed_computation_keeps_the_previous_rendering_and_is_logged(client, task, monkeypatch, caplog):
    from tracker.web import api

    client.get("/api/tasks/7")
    a_passing_run(task)

    def broken(*args):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(api, "_task_body", broken)
    with caplog.at_level("ERROR", logger="tracker.web.conditional"):
        assert client.get("/api/tasks/7")["X-Board-Rendering"] == "previous"
    assert "the database went away" in caplog.text and "previous one" in caplog.text
    assert client.get("/api/tasks/7")["X-Board-Rendering"] == "previous"  # still answered, the old page
    monkeypatch.undo()


@pytest.mark.django_db(transaction=True)
def test_gunicorn_workers_share_a_previous_rendering_and_compute_the_next_after_sending_it(tmp_path):
    from tests.hardening.servers import Served

    # Two workers sharing renderings (WEB_SHARED_RENDERINGS, the database's cache table): whichever process a read
    # reaches holds the page's previous rendering; serve.sh warms the site's pages at start.
    server = Served(tmp_path, workers=2, threads=2, extra_env={
        "WEB_STALE_SECONDS": "60", "WEB_VERSION_SECONDS": "0", "WEB_SHARED_RENDERINGS": "1"})
    try:
        server.wait_ready()
        deadline = time.monotonic() + 120
        while "warm_pages: 200" not in server.output() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "ms  en       /\n" in server.output(), server.output()  # the board, warmed beside gunicorn's start

        def read():
            request = urllib.request.Request(server.url + "/", headers={"X-Forwarded-Proto": "https"})
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.headers.get("X-Board-Rendering"), response.read().decode()

        assert read()[0] is None
        with sqlite3.connect(tmp_path / "db.sqlite3") as db:  # a write by another process (a worker, a sync)
            db.execute("INSERT INTO tracker_contributor (login, created) VALUES ('newcomer', '2026-12-07 00:00:00')")
        marker, body = read()
        assert marker == "previous" and "newcomer" not in body
        deadline = time.monotonic() + 30
        while (answer := read())[0] == "previous" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer[0] is None and "newcomer" in answer[1], server.output()
    finally:
        server.stop()


# --- WEB_SHARED_RENDERINGS: one rendering for every web process ---------------------------------------------------

def other_process():
    """What another web process sees: its own memory is empty; the shared store (the database's cache table here)
    is the same."""
    caches["pages"].clear()


def test_a_rendering_made_by_one_process_is_read_by_another(client, task, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.WEB_SHARED_RENDERINGS = True
    first = client.get("/api/tasks/7")
    other_process()
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/api/tasks/7")
    assert again.content == first.content
    rendering = [q["sql"] for q in queries.captured_queries if "tracker_latestresult" in q["sql"]]
    assert rendering == [] and any("board_cache" in q["sql"] for q in queries.captured_queries)
    a_passing_run(task)
    other_process()  # it never rendered this page: the shared previous rendering, at once
    previous = client.get("/api/tasks/7")
    assert previous["X-Board-Rendering"] == "previous" and kind(previous) == kind(first)
    other_process()
    assert kind(client.get("/api/tasks/7")) == "verified"  # the one computed after that answer, shared


def test_a_page_another_process_is_rendering_is_waited_for_not_rendered_again(settings, monkeypatch):
    settings.WEB_SHARED_RENDERINGS = True
    store = caches["default"]
    store.add("rendering:page-k", 1, timeout=30)  # another process is rendering it ...
    waits = []

    def other_process_finishes(seconds):  # ... and stores it during the third wait
        waits.append(seconds)
        if len(waits) == 3:
            store.set("latest:page", conditional.Rendering(time.time(), "page-k", "theirs"), 60)
            store.delete("rendering:page-k")

    monkeypatch.setattr(conditional, "_sleep", other_process_finishes)
    computed = []
    assert conditional.cached("page-k", lambda: computed.append(1) or "mine", "latest:page", shared=True) == "theirs"
    assert computed == [] and len(waits) == 3
    monkeypatch.setattr(conditional, "_sleep", lambda seconds: time.sleep(0.05))
    store.add("rendering:page-j", 1, timeout=30)
    assert conditional.cached("page-j", lambda: "mine", "latest:page", shared=True, wait=False) is None  # a refresh
    from tracker.web import budget

    with pytest.raises(budget.ReadTimeExceeded), budget.bounded(0.3):  # nobody delivers it: the read's 503
        conditional.cached("page-j", lambda: "mine", "latest:page", shared=True)
    store.delete("rendering:page-j")
    assert conditional.cached("page-j", lambda: "mine", "latest:page", shared=True) == "mine"  # rendered here
    # one entry per page in the shared store: the newest version's rendering replaced the older one
    assert store.get("latest:page").key == "page-j" and store.get("page-k") is None


@pytest.mark.parametrize("url", ["/", "/tasks/7", "/charts/overview"])
def test_a_rendering_another_process_made_carries_the_visitors_own_csrf_token(client, task, settings, monkeypatch,
                                                                               url):
    """Each process draws its own placeholder (tests/hardening/test_no_server_paths_or_token_leaks.py): a shared
    rendering is kept with the one it carries."""
    settings.WEB_SHARED_RENDERINGS = True
    monkeypatch.setattr(conditional, "CSRF_PLACEHOLDER", "csrf-placeholder-" + "a" * 32)  # the other process's
    client.get(url)
    monkeypatch.undo()
    settings.WEB_SHARED_RENDERINGS, settings.WEB_STALE_SECONDS = True, 60
    other_process()
    body = client.get(url).content.decode()
    assert "csrf-placeholder-" not in body
    if "csrfmiddlewaretoken" in body:  # the board's forms and the task page's sign-in form carry the visitor's token
        assert f'value="{conditional.CSRF_PLACEHOLDER}"' not in body
