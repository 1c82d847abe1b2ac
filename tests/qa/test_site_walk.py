"""Walk the site as a user would, in English and Chinese: every same-site link reachable from the
board and from a task page answers without 4xx/5xx, and the pages load without console errors."""
import re
from collections import defaultdict
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from django.conf import settings
from django.core.management import call_command

from tracker.models import ConfigResult, FailingConfig, Task, TestRun
from tracker.services import latest
from tracker.services.synthetic import generate_results

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "board.json"
# Links a crawler must not follow: logging out changes the session, admin has its own tests.
SKIP = re.compile(r"^/(accounts/logout|admin/|i18n/)")
# Visiting every one of 183 task pages proves nothing more than a few of them: cap each URL shape.
PER_SHAPE = 2
# English phrases that must not be left on the Chinese pages (the nav, the task page's sections).
ENGLISH_LEFTOVERS = ["Board", "Regressions", "Failing configs", "Latest verdict per config", "Pull requests",
                     "History", "Claim this task", "waiting for a GPU worker", "engine gap, not a Paddle bug"]


@pytest.fixture
def site(db):
    call_command("loaddata", str(FIXTURE), verbosity=0)
    generate_results(runs=3, results=600, seed=5, diff_maps=3)
    # The newest CPU verdict of a CPU task gets a diff map, so its row links to the diff-map page.
    result = ConfigResult.objects.filter(run__lane="cpu", task__kernel="CPU").order_by("-run_id", "id").first()
    result.diff_map = ConfigResult.objects.filter(diff_map__isnull=False).first().diff_map
    result.save(update_fields=["diff_map"])
    # One config the engine can't run (its verdict in the same run says so).
    gap = FailingConfig.objects.create(task=result.task, config=f"{result.task.api}(Tensor([2, 3],\"float32\"), )",
                                       config_hash="qa-unsupported", origin_file="qa", category="accuracy")
    ConfigResult.objects.create(run=result.run, failing_config=gap, task=result.task, status="unsupported",
                                message="no spec for this API in the engine registry")
    latest.rebuild([gap.pk])  # written beside store_result: its newest-verdict row too
    # A GPU run that waits, because no GPU worker exists here.
    gpu_task = Task.objects.filter(kernel="GPU", locked_reason="").first()
    TestRun.objects.create(scope={"kind": "task", "tasks": [gpu_task.number]}, lane="gpu", total=1)
    return {"task": result.task, "gpu_task": gpu_task}


def shape(path: str) -> str:
    return re.sub(r"\d+", "N", urlsplit(path).path)


def same_site_links(page, base: str) -> set[str]:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    found = set()
    for href in hrefs:
        url = urljoin(page.url, href.split("#")[0])
        if url.startswith(base) and not SKIP.match(urlsplit(url).path):
            found.add(url[len(base):] or "/")
    return found


def walk(page, base: str, start: list[str]) -> dict[str, int]:
    """Open the start pages in the browser, then every link they show (capped per URL shape)."""
    statuses: dict[str, int] = {}
    per_shape: dict[str, int] = defaultdict(int)
    queue = list(start)
    while queue:
        path = queue.pop(0)
        if path in statuses:
            continue
        if path not in start:
            per_shape[shape(path)] += 1
            if per_shape[shape(path)] > PER_SHAPE:
                continue
        response = page.goto(base + path)
        statuses[path] = response.status
        if path in start or per_shape[shape(path)] == 1:
            # Follow the links of the first page of each shape too: runs, charts, contributors…
            queue.extend(sorted(same_site_links(page, base) - set(statuses)))
    return statuses


def test_every_link_from_the_board_and_a_task_page_answers_in_both_languages(live_server, page, site):
    base = live_server.url
    for language in ("en", "zh-hans"):
        page.context.add_cookies([{"name": settings.LANGUAGE_COOKIE_NAME, "value": language, "url": base}])
        statuses = walk(page, base, ["/", f"/tasks/{site['task'].number}", f"/tasks/{site['gpu_task'].number}"])
        broken = {path: status for path, status in statuses.items() if status >= 400}
        assert not broken, (language, broken)
        assert len(statuses) > 20, statuses  # the walk really followed the board's and the task page's links
        assert page.console_errors == [], (language, page.console_errors)

        page.goto(f"{base}/tasks/{site['task'].number}")
        assert page.evaluate("document.documentElement.lang") == language
        # One re-test section with one latest-verdict table (the runner's and the charts' used to be two).
        assert page.locator("table#latest-verdicts").count() == 1
        assert page.locator("table#latest-verdicts input.repro").count() >= 1
        assert page.locator("table#latest-verdicts a[href*='/diff']").count() >= 1
        text = page.inner_text("body")
        page.goto(f"{base}/tasks/{site['gpu_task'].number}")
        gpu_text = page.inner_text("body")
        if language == "en":
            assert "engine gap, not a Paddle bug" in text
            assert "waiting for a GPU worker" in gpu_text
        else:
            assert "引擎暂不支持，不是Paddle的问题" in text
            assert "等待 GPU worker" in gpu_text
            leftovers = [s for s in ENGLISH_LEFTOVERS if s in text or s in gpu_text]
            assert leftovers == [], leftovers
