"""Reported vs re-tested (issue 36 item 3): a CPU task's reported failures re-tested on Paddle 3.0.0 (the release
current when reported) in a real 3.0.0 env — the reproduction rate and the configs that do not reproduce, with
what the report logged for them, on the task page and in /api/tasks/<n>."""
import pytest

from apitester.pool import TimeBudget
from tracker.models import ConfigResult
from tracker.services.report_import import import_reports
from tracker.services.reported_diffs import import_reported_diffs
from tracker.services.runs import create_run, execute_run
from tracker.vocab import FAILING, PASSING

from tests.board.conftest import write_report_tree
from tests.factories import make_task

from .conftest import OLD_RELEASE

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}
OVERFLOW = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'  # Paddle overflows to inf: fails
DOUBLING = 'paddle.Tensor.__mul__(Tensor([8, 8],"float32"), 2.0, )'  # agrees with Torch
LOG = f'''2025-06-01 11:00:01.000000 GPU 4 4 test begin: {OVERFLOW}
[accuracy error] {OVERFLOW} 
Mismatched elements: 9 / 64 (14.1%)
Greatest absolute difference: inf at index (3, 5) (up to 0.01 allowed)
Greatest relative difference: inf at index (3, 5) (up to 0.01 allowed)
2025-06-01 11:00:02.000000 GPU 4 4 test begin: {DOUBLING}
[accuracy error] {DOUBLING} 
Mismatched elements: 3 / 64 (4.7%)
Greatest absolute difference: 0.5 at index (0, 1) (up to 0.01 allowed)
Greatest relative difference: 0.25 at index (0, 1) (up to 0.01 allowed)
'''


def test_reproduction_rate_on_the_release_current_when_reported(old_env, tmp_path, client):
    task = make_task(141, "paddle.Tensor.mul")
    root = write_report_tree(tmp_path, {"reports/ci_ce_cpu/20250607/cpu_error/error_config.txt": f"{OVERFLOW}\n{DOUBLING}\n",
                                        "reports/ci_ce_cpu/20250607/cpu_error/error_log.log": LOG})
    import_reports(root)
    assert import_reported_diffs(root).created == 2
    before = client.get("/api/tasks/141").json()["reproduction"]
    assert (before["tested"], before["rate"], before["release"]) == (0, None, OLD_RELEASE)
    assert f"manage.py retest --task 141 --releases {OLD_RELEASE}" in client.get("/tasks/141").content.decode()

    run = create_run("task", tasks=[141], lane="cpu", release=OLD_RELEASE)
    assert execute_run(run.pk, workers=1, options=FAST).state == "done"
    verdicts = {r.failing_config.config: r.status for r in ConfigResult.objects.filter(run=run)}
    assert verdicts[OVERFLOW] in FAILING and verdicts[DOUBLING] in PASSING  # the engine's own reading on 3.0.0

    body = client.get("/api/tasks/141").json()
    reproduction = body["reproduction"]
    assert (reproduction["tested"], reproduction["judged"], reproduction["reproduced"], reproduction["rate"]) == (2, 2, 1, 0.5)
    [disagreement] = reproduction["not_reproduced"]
    assert disagreement["config"] == DOUBLING
    assert [(r["date"], r["max_abs"], r["mismatched"]) for r in disagreement["reported"]] == [("2025-06-07", 0.5, 3)]
    assert body["cpu_evidence"] is None

    page = client.get("/tasks/141").content.decode()
    assert f"1 of 2 reported failures reproduce on Paddle {OLD_RELEASE} (the release current when reported)" in page
    assert "reproduction rate 50%" in page
    table = page[page.index('id="not-reproduced"'):]
    assert DOUBLING.replace('"', "&quot;") in table and "reported by PaddleAPITest (CPU, 2025-06-07)" in table
    zh = client.get("/tasks/141", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"2 个报告的失败中有 1 个在 Paddle {OLD_RELEASE}" in zh and "复现率 50%" in zh


def test_gpu_tasks_have_no_reproduction_rate(client):
    make_task(133, "paddle.pow", ['paddle.pow(Tensor([2],"int32"), 3, )'], kernel="GPU")
    assert client.get("/api/tasks/133").json()["reproduction"] is None
    assert 'id="reproduction"' not in client.get("/tasks/133").content.decode()
