"""Board pages and JSON API on the committed board fixture (the seed as imported)."""
import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tracker.models import Claim, Contributor, Event, FailingConfig, PullRequest, Task

from .conftest import SEED, needs_seed, wipe_board, write_report_tree

pytestmark = pytest.mark.django_db


def rows(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="task-(\d+)">', html)]


def api_numbers(client, query: str) -> list[int]:
    response = client.get("/api/tasks" + query)
    assert response.status_code == 200
    data = response.json()
    assert data["count"] == len(data["tasks"])
    return [t["number"] for t in data["tasks"]]


def test_fixture_is_the_seed_board(fixture_board):
    assert Task.objects.count() == 183
    assert Task.objects.exclude(locked_reason="").count() == 26
    assert Task.objects.filter(claims__isnull=False).distinct().count() == 113
    assert Task.objects.filter(pull_requests__isnull=False).distinct().count() == 103
    assert Contributor.objects.count() == 11 and PullRequest.objects.values("number").distinct().count() == 67
    assert Event.objects.filter(kind="task_created").count() == 183


@needs_seed
def test_fixture_matches_a_fresh_seed_import(fixture_board):
    def state():
        return (
            sorted(Task.objects.values_list("number", "api", "kernel", "locked_reason", "status")),
            sorted(Claim.objects.values_list("task__number", "contributor__login", "status", "source", "source_ref")),
            sorted(PullRequest.tasks.through.objects.values_list("task__number", "pullrequest__repo", "pullrequest__number")),
        )
    committed = state()
    wipe_board()
    call_command("load_board", str(SEED))
    assert state() == committed


def test_board_lists_every_task_with_few_queries(fixture_board, client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert rows(html) == list(range(1, 184))
    # no per-row queries (10 of them compute the data version; the 'fixed in' column four (the tasks' lanes, the
    # newest verdict of each config per release, those verdicts, and the bisecting matrices' release lists:
    # selectors.releases.release_grids), the 'distinct
    # failures' column and the runs-in-progress line one each, the run whose per-task progress the rows and the
    # panel show one each; the chips: whether GitHub told any PR state (two), the tracking issue's summary (one), the
    # verified fixes (two))
    assert len(queries) <= 31, "\n".join(q["sql"][:120] for q in queries.captured_queries)
    with CaptureQueriesContext(connection) as cached_queries:
        again = client.get("/")
    # The second visitor gets the rows rendered for the first: only the data version is read.
    assert rows(again.content.decode()) == rows(html) and len(cached_queries) < len(queries) - 3
    row2 = re.search(r'<tr id="task-2">.*?</tr>', html, re.S).group(0)
    assert "paddle.all" in row2 and "@co63oc" in row2 and "#280" in row2 and "GPU" in row2
    row160 = re.search(r'<tr id="task-160">.*?</tr>', html, re.S).group(0)
    assert "status-locked" in row160 and "暂不要报名" in row160


def test_board_filters_match_the_database(fixture_board, client):
    assert rows(client.get("/?kernel=CPU").content.decode()) == list(Task.objects.filter(kernel="CPU").values_list("number", flat=True))
    assert len(rows(client.get("/?kernel=gpu").content.decode())) == 107
    assert rows(client.get("/?status=locked").content.decode()) == list(range(155, 181))
    co63oc = sorted(set(Claim.objects.filter(contributor__login="co63oc").values_list("task__number", flat=True)))
    assert rows(client.get("/?contributor=co63oc").content.decode()) == co63oc
    assert rows(client.get("/?contributor=@CO63OC&kernel=GPU").content.decode()) == [
        n for n in co63oc if Task.objects.get(number=n).kernel == "GPU"]
    assert rows(client.get("/?q=cumsum").content.decode()) == [16, 17, 159, 167]
    open_tasks = rows(client.get("/?open=1").content.decode())
    assert open_tasks == sorted(Task.objects.filter(locked_reason="", claims__isnull=True).values_list("number", flat=True))
    assert len(open_tasks) == 183 - 113 - 26 and 22 in open_tasks and 1 not in open_tasks
    assert rows(client.get("/?q=nextafter&open=1").content.decode()) == []


def test_board_sorting(fixture_board, client):
    assert rows(client.get("/?sort=-number").content.decode()) == list(range(183, 0, -1))
    by_api = rows(client.get("/?sort=api").content.decode())
    apis = [Task.objects.get(number=n).api for n in by_api]
    assert apis == sorted(apis)
    by_claimants = rows(client.get("/?sort=-claimants").content.decode())
    counts = [Claim.objects.filter(task__number=n).count() for n in by_claimants]
    assert counts == sorted(counts, reverse=True) and counts[0] == 3
    html = client.get("/?kernel=CPU&sort=api").content.decode()
    assert 'href="?kernel=CPU&amp;sort=-api"' in html  # clicking the sorted column reverses it, keeping filters


def test_bad_filter_values_are_explained(fixture_board, client):
    html = client.get("/?status=nonsense&kernel=TPU").content.decode()
    assert "Unknown status &#x27;nonsense&#x27;" in html and "Unknown kernel &#x27;TPU&#x27;" in html
    assert len(rows(html)) == 183
    response = client.get("/api/tasks?status=nonsense")
    assert response.status_code == 400 and "Unknown status 'nonsense'" in response.json()["errors"][0]


def test_json_api_list_and_detail(fixture_board, client):
    data = client.get("/api/tasks").json()
    assert data["count"] == 183
    task9 = next(t for t in data["tasks"] if t["number"] == 9)
    assert task9 == {
        "number": 9, "api": "paddle.broadcast_to", "kernel": "GPU", "status": "pr_submitted", "locked": False, "locked_reason": "",
        "claimants": ["ooooo-create"],
        "prs": [{"repo": "PaddlePaddle/Paddle", "number": 72992, "state": "unknown",
                 "url": "https://github.com/PaddlePaddle/Paddle/pull/72992", "author": None}],
        "failing_configs": 0,
    }
    assert api_numbers(client, "?kernel=CPU&open=1") == rows(client.get("/?kernel=CPU&open=1").content.decode())
    assert api_numbers(client, "?contributor=NKNaN&sort=-number")[0] == 147
    assert client.get("/api/tasks/9").json()["failing_configs_in_latest_report"] == 0
    detail = client.get("/api/tasks/160").json()
    assert detail["locked"] is True and detail["locked_reason"] == "output dtype类型不同，暂不要报名" and detail["status"] == "locked"
    detail = client.get("/api/tasks/2").json()
    assert [c["login"] for c in detail["claims"]] == ["BeingGod", "cangtianhuang", "co63oc"]
    assert detail["claims"][0]["source"] == "seed" and detail["claims"][0]["source_ref"].endswith(":24")
    assert client.get("/api/tasks/999").status_code == 404


def test_task_page_shows_claims_prs_configs_and_history(fixture_board, client, tmp_path):
    task = Task.objects.get(number=15)
    FailingConfig.objects.create(
        task=task, config='paddle.cumprod(Tensor([3],"float64"), dim=0, )', config_hash="x" * 64,
        origin_file="reports/ci_ce_cpu/error_config.txt", category="accuracy", in_latest_report=False,
        first_seen="2025-04-28", last_seen="2025-06-19", gone_since="2025-07-03",
    )
    html = client.get("/tasks/15").content.decode()
    assert "paddle.cumprod" in html and "@BeingGod" in html and "@ooooo-create" in html
    assert "PaddlePaddle/Paddle#72897" in html and "PFCCLab/PaddleAPITest#212" in html
    assert "gone from the report on 2025-07-03" in html and "2025-04-28" in html
    assert "task_created" in html and "000_75df1ea3bdaae918.txt:37" in html  # history with the seed line
    assert client.get("/tasks/999").status_code == 404
    locked = client.get("/tasks/170").content.decode()
    assert "Locked, not open for claiming:" in locked and "暂不要报名" in locked


def test_contributor_page(fixture_board, client):
    html = client.get("/contributors/NKNaN").content.decode()
    numbers = sorted(set(int(n) for n in re.findall(r'href="/tasks/(\d+)"', html)))
    assert numbers == sorted(Claim.objects.filter(contributor__login="NKNaN").values_list("task__number", flat=True))
    assert "claimed" in html
    assert client.get("/contributors/nobody-here").status_code == 404


def test_pages_in_each_language(fixture_board, client):
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="en">' in english and ">Board<" in english and "open for claiming" in english
    chinese = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<html lang="zh-hans">' in chinese and ">看板<" in chinese and "可报名" in chinese and "已锁定" in chinese
    assert "共 183 个任务（CPU 76 个，GPU 107 个）" in chinese
    task = client.get("/tasks/1", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "报名人" in task and "历史记录" in task
    # The language switch stores the choice and sends the user back.
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/tasks/1"})
    assert response.status_code == 302 and response["Location"] == "/tasks/1"
    assert "报名人" in client.get("/tasks/1").content.decode()
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Claimants" in client.get("/tasks/1").content.decode()


def test_login_page_renders(client):
    assert client.get("/accounts/login/").status_code == 200


def test_bootstrap_board_loads_the_fixture_once_and_imports_reports(tmp_path, capsys):
    wipe_board()
    root = write_report_tree(tmp_path, {
        "reports/ci_ce_cpu/error_config.txt": 'paddle.add_n(list[Tensor([2],"float32"),Tensor([2],"float32"),], )\n',
    })
    call_command("bootstrap_board", "--reports", str(root))
    assert Task.objects.count() == 183
    assert Task.objects.get(number=1).failing_configs.count() == 1
    state = (Task.objects.count(), Event.objects.count(), FailingConfig.objects.count())
    call_command("bootstrap_board", "--reports", str(root))
    assert (Task.objects.count(), Event.objects.count(), FailingConfig.objects.count()) == state
    out = capsys.readouterr().out
    assert "loaded 183 tasks" in out and "board already holds 183 tasks" in out
    call_command("bootstrap_board", "--reports", str(tmp_path / "missing"))
    assert "no PaddleAPITest reports at" in capsys.readouterr().out


def test_bootstrap_board_never_loads_the_fixture_over_other_rows(tmp_path):
    from django.core.management import CommandError

    wipe_board()
    Event.objects.create(kind="webhook", source="comment", created="2025-01-01T00:00:00Z")
    with pytest.raises(CommandError, match="Event rows exist"):
        call_command("bootstrap_board", "--reports", str(tmp_path))
    assert Task.objects.count() == 0 and Event.objects.get().kind == "webhook"
