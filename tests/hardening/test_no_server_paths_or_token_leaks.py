"""Pages show no server path and user content never becomes a visitor's CSRF token: a report import is
shown relative to the reports root (PADDLEAPITEST_REPORTS), and a PR title holding a would-be CSRF
placeholder is shown as written — through the real import, the real PR service and the real pages."""
import re
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.board.conftest import write_report_tree
from tests.github import payloads
from tracker.models import Event, Task
from tracker.services.pull_requests import apply_pull_request
from tracker.services.report_import import import_reports
from tracker.web.conditional import CSRF_PLACEHOLDER, page_cache

from .production import REPO

pytestmark = pytest.mark.django_db

CONFIG = 'paddle.abs(Tensor([2],"float32"), )\n'
# The placeholder the page cache used until now: anyone could type it.
OLD_FIXED_PLACEHOLDER = "csrf-token-placeholder-9f2c6a1e"


@pytest.fixture(autouse=True)
def fresh_pages():
    page_cache.clear()
    yield
    page_cache.clear()


def test_a_report_import_is_shown_relative_to_the_reports_root(client, settings, tmp_path):
    server_dir = tmp_path / "srv" / "data" / "paddleapitest"
    settings.PADDLEAPITEST_REPORTS = str(server_dir)
    inside = server_dir / "mirror"  # a tree under the reports root
    elsewhere = tmp_path / "opt" / "old-copy"  # a directory outside it: only its own name is shown
    Task.objects.create(number=1, api="paddle.abs", kernel="CPU")
    for root, shape in ((server_dir, "2"), (inside, "3"), (elsewhere, "4")):
        write_report_tree(root, {"reports/ci_ce_cpu/error_config.txt": CONFIG.replace("2", shape)})
        import_reports(root)
    refs = Event.objects.filter(task__number=1, kind="configs_imported").values_list("source_ref", flat=True)
    assert sorted(refs) == sorted(str(d) for d in (server_dir, inside, elsewhere))  # stored as read
    for visitor in (Client(), _staff()):
        page = visitor.get("/tasks/1").content.decode()
        assert str(tmp_path) not in page and "/srv/" not in page
        shown = re.findall(r'<span class="muted">([^<]*)</span></td></tr>', page)
        assert sorted(s.strip() for s in shown if s.strip()) == sorted(
            ["PADDLEAPITEST_REPORTS", "PADDLEAPITEST_REPORTS/mirror", "old-copy"])


def test_a_pr_title_holding_a_placeholder_is_shown_as_written(client, settings):
    settings.GITHUB_PR_TITLE_PREFIX = "Accuracy diff"
    Task.objects.create(number=7, api="paddle.cached_7", kernel="CPU")
    title = f"[Accuracy diff No.7] fix {OLD_FIXED_PLACEHOLDER} and csrf-placeholder-"
    apply_pull_request(payloads.pull(73007, title, "mallory"), repo="PaddlePaddle/Paddle")
    for visitor in (Client(), Client()):
        visitor.get("/tasks/7")  # the CSRF cookie
        page = visitor.get("/tasks/7").content.decode()
        assert f"fix {OLD_FIXED_PLACEHOLDER} and csrf-placeholder-" in page
        # The visitor's token is in the forms, and nowhere else.
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        assert page.count(token) == page.count('name="csrfmiddlewaretoken"') >= 1
        assert CSRF_PLACEHOLDER not in page


def test_each_process_draws_its_own_placeholder():
    script = "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); django.setup(); " \
             "from tracker.web.conditional import CSRF_PLACEHOLDER as p; print(p)"
    env = {"DJANGO_DEBUG": "1", "PATH": "/usr/bin:/bin"}
    drawn = {subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                            check=True).stdout.strip() for _ in range(2)}
    assert len(drawn) == 2 and CSRF_PLACEHOLDER not in drawn
    assert all(re.fullmatch(r"csrf-placeholder-[0-9a-f]{32}", p) for p in drawn)


def _staff() -> Client:
    staff = Client()
    staff.force_login(User.objects.create_user("maint", is_staff=True))
    return staff
