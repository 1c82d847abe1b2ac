"""Warming (tracker/web/warm.py, issue #45): the public pages visitors land on are rendered into the shared
renderings before anyone asks — by `manage.py warm_pages` (scripts/serve.sh runs it at start) and after each run for
the pages it changed — so a visitor's first read is a cache read. Under the production settings (an allowed host,
https behind the proxy) the pages render as a visitor's would, not as redirects or 400s."""
import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import make_task
from tests.hardening.test_public_reads import a_passing_run, configs_of, history
from tracker import tasks
from tracker.web import warm

pytestmark = pytest.mark.django_db


@pytest.fixture
def shared(settings):
    settings.WEB_SHARED_RENDERINGS = True
    caches["pages"].clear()
    task = make_task(7, configs=configs_of(7))
    history(task, 1)
    return task


def rendering_queries(client, url: str) -> int:
    """The queries a read costs in a web process that has not rendered the page itself, beyond what the same read
    costs from that process's memory: 1 (the shared cache's row) when the page was warmed, its rendering's if not."""
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    caches["pages"].clear()
    elsewhere = count()
    return elsewhere - count()


def test_warm_pages_renders_the_site_pages_for_every_language(shared, client, capsys):
    assert rendering_queries(client, "/charts/overview") > 3  # not warmed: the visitor's read renders it
    call_command("warm_pages")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(warm.SITE_PATHS) * 2 + 1 and all(line.startswith("200 ") for line in lines[:-1]), lines
    assert lines[-1].startswith(f"warmed {len(warm.SITE_PATHS) * 2} pages in ")
    for url in ("/", "/api/tasks", "/charts/overview", "/alignment", "/flaky"):
        assert rendering_queries(client, url) == 1, url


def test_warm_pages_under_production_settings_renders_pages_not_redirects(shared, settings, capsys):
    settings.ALLOWED_HOSTS = [".board.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    call_command("warm_pages", "--language", "en", "--task", "7")
    lines = capsys.readouterr().out.splitlines()[:-1]
    assert {line.split()[0] for line in lines} == {"200"} and any(line.endswith(" /tasks/7") for line in lines)


def test_warm_pages_all_tasks_renders_every_tasks_page_after_the_sites(shared, client, capsys):
    make_task(9, configs=configs_of(9, 3))
    call_command("warm_pages", "--all-tasks", "--language", "en")
    paths = [line.split()[-1] for line in capsys.readouterr().out.splitlines()[:-1]]
    assert paths == list(warm.SITE_PATHS) + ["/tasks/7", "/api/tasks/7", "/tasks/9", "/api/tasks/9"]
    assert rendering_queries(client, "/tasks/9") == 1 and rendering_queries(client, "/api/tasks/9") == 1


def test_warm_pages_refuses_when_renderings_are_each_processs_own(settings):
    settings.WEB_SHARED_RENDERINGS = False
    with pytest.raises(CommandError, match="WEB_SHARED_RENDERINGS is off"):
        call_command("warm_pages")


def test_warm_pages_takes_at_most_twenty_tasks(shared):
    with pytest.raises(CommandError, match="at most 20 tasks"):
        call_command("warm_pages", *[arg for n in range(21) for arg in ("--task", str(n))])


def test_a_finished_run_warms_its_own_its_tasks_and_the_sites_pages(shared, client):
    run = a_passing_run(shared)
    tasks.follow_up_finished_run(run.pk)
    assert rendering_queries(client, "/tasks/7") == 1 and rendering_queries(client, "/api/tasks/7") == 1
    assert client.get("/api/tasks/7").json()["retest"]["verification"]["kind"] == "verified"  # this version's
    assert rendering_queries(client, "/") == 1
    assert rendering_queries(client, f"/runs/{run.pk}") == 1 and rendering_queries(client, f"/api/runs/{run.pk}") == 1


def test_a_run_over_many_tasks_warms_the_sites_pages_only():
    assert warm.task_paths(range(1, 22)) == [] and warm.task_paths([3, 3, 1]) == [
        "/tasks/1", "/api/tasks/1", "/tasks/3", "/api/tasks/3"]
