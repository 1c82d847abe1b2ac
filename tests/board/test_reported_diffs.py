"""Reported diffs: the real shared logs imported onto the real board (once for this module), re-imported
(idempotent), a small tree with a bad block (changes nothing stored), the API's `configs`, the task page
and the heatmap's "reported" metric."""
import datetime as dt
import json
import math
import re

import pytest
from django.core.management import call_command

from apitester.reports.report_logs import read_logs
from tracker.models import Event, FailingConfig, ReportedDiff, Task
from tracker.selectors.reported import API_CONFIGS_PER_PAGE, tasks_with_reported_diffs
from tracker.services.board_import import load_board_file
from tracker.services.report_import import config_hash, import_reports
from tracker.services.reported_diffs import import_reported_diffs
from tracker.selectors.board import task_configs
from tracker.web.board import CONFIGS_PER_PAGE

from .conftest import REPORTS, SEED, needs_reports, needs_seed, wipe_board, write_report_tree

pytestmark = [pytest.mark.django_db]


@pytest.fixture(scope="module")
def imported(django_db_setup, django_db_blocker):
    if not SEED.is_file() or not (REPORTS / "reports").is_dir():
        pytest.fail(f"seed board ({SEED}) or PaddleAPITest reports ({REPORTS}/reports) missing")
    with django_db_blocker.unblock():
        wipe_board()
        load_board_file(SEED)
        import_reports(REPORTS)
        first = import_reported_diffs(REPORTS)
        events = Event.objects.count()
        ids = set(ReportedDiff.objects.values_list("id", flat=True))
        second = import_reported_diffs(REPORTS)
        same = ids == set(ReportedDiff.objects.values_list("id", flat=True)) and events == Event.objects.count()
    yield {"first": first, "second": second, "second_changed_nothing": same}
    with django_db_blocker.unblock():
        wipe_board()


@needs_seed
@needs_reports
def test_real_logs_import_every_block_and_reimport_changes_nothing(imported):
    first, second = imported["first"], imported["second"]
    assert first.logs == 12 and first.unparseable == [] and first.blocks > 15000
    assert first.created == ReportedDiff.objects.count() > 10000
    assert (second.created, second.updated, second.deleted, second.unchanged) == (0, 0, 0, first.created)
    assert imported["second_changed_nothing"]
    gpu_tasks = Task.objects.filter(kernel="GPU").count()
    with_diff = tasks_with_reported_diffs("GPU")
    assert gpu_tasks == 107 and 0 < with_diff <= gpu_tasks


@needs_seed
@needs_reports
def test_a_stored_row_is_what_the_log_says(imported):
    # An independent look at the log: the first GPU accuracy block of 20250606/uncertain_error.
    log = REPORTS / "reports/ci_ce_gpu/test_history/20250606/uncertain_error/error_log.log"
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    number, line = next((i, text) for i, text in enumerate(lines, 1) if text.startswith("[accuracy error]"))
    config = re.sub(r"^\[accuracy error\] (backward )?", "", line).strip()
    mismatched = next(text for text in lines[number:] if text.startswith("Mismatched elements:"))
    a, b = map(int, re.match(r"Mismatched elements: (\d+) / (\d+)", mismatched).groups())
    row = ReportedDiff.objects.get(log_file=log.relative_to(REPORTS).as_posix(), log_line=number)
    assert row.failing_config.config == config and row.failing_config.config_hash == config_hash(config)
    assert (row.device, row.report_date, row.category, row.task.kernel) == ("GPU", dt.date(2025, 6, 6), "uncertain", "GPU")
    assert (row.mismatched, row.total, row.kind) == (a, b, "values")


@needs_seed
@needs_reports
def test_api_lists_configs_with_reported_diffs_paginated(imported, client):
    task = Task.objects.filter(kernel="GPU", reported_diffs__isnull=False).order_by("number").first()
    body = client.get(f"/api/tasks/{task.number}").json()
    configs = body["configs"]
    assert configs["count"] == task.failing_configs.count()
    assert configs["per_page"] == API_CONFIGS_PER_PAGE and len(configs["items"]) == min(configs["count"], API_CONFIGS_PER_PAGE)
    assert configs["with_reported_diff"] == task.reported_diffs.values("failing_config").distinct().count() > 0
    reported = [item for item in configs["items"] if item["reported"]]
    assert reported, "the first page holds a config with a reported diff"
    for item in reported:
        dates = [r["date"] for r in item["reported"]]
        assert dates == sorted(dates, reverse=True)
        assert set(item["reported"][0]) == {"direction", "mismatched", "total", "max_abs", "max_rel", "date", "device",
                                            "category", "kind", "message"}
        assert all(r["device"] == "GPU" for r in item["reported"])
    # No GPU verdict appears from the reports: the re-test part stays what the runs (none here) say.
    assert body["retest"]["latest_verdicts"] == [] and body["retest"]["verification"]["kind"] == "untested"
    for bad in ("x", "0", "²", "9" * 5000):
        assert client.get(f"/api/tasks/{task.number}?configs_page={bad}").status_code == 400
    last = client.get(f"/api/tasks/{task.number}?configs_page={configs['pages'] + 5}").json()["configs"]
    assert last["page"] == configs["pages"]  # past the end: the last page, as the task page does


@needs_seed
@needs_reports
def test_infinite_reported_differences_are_valid_json(imported, client):
    row = ReportedDiff.objects.filter(max_abs=math.inf).select_related("task", "failing_config").first()
    assert row is not None
    ids = list(row.task.failing_configs.order_by("id").values_list("id", flat=True))
    page = ids.index(row.failing_config_id) // API_CONFIGS_PER_PAGE + 1
    response = client.get(f"/api/tasks/{row.task.number}?configs_page={page}")
    body = json.loads(response.content.decode())  # strict JSON: no bare Infinity
    item = next(i for i in body["configs"]["items"] if i["config"] == row.failing_config.config)
    assert "inf" in [r["max_abs"] for r in item["reported"]]


def page_of(config: FailingConfig) -> int:
    """The task page (50 configs a page) that lists this config, in the page's own order."""
    ids = list(task_configs(config.task).values_list("id", flat=True))
    return ids.index(config.id) // CONFIGS_PER_PAGE + 1


@needs_seed
@needs_reports
def test_task_page_labels_the_reported_diffs_in_both_languages(imported, client):
    diff = ReportedDiff.objects.filter(task__kernel="GPU", report_date=dt.date(2025, 6, 6)).select_related(
        "failing_config__task").order_by("id").first()
    config = diff.failing_config
    url = f"/tasks/{config.task.number}?page={page_of(config)}"
    page = client.get(url).content.decode()
    row = page[page.index(f'id="config-{config.id}"'):]
    row = row[:row.index("</tr>")]
    assert "reported by PaddleAPITest (GPU, 2025-06-06)" in row and diff.kind in row
    zh = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "PaddleAPITest 报告（GPU，2025-06-06）" in zh and "报告记录的差异" in zh


@needs_seed
@needs_reports
def test_heatmap_reported_metric_fills_gpu_rows(imported, client):
    page = client.get("/charts/heatmap?metric=reported").content.decode()
    table = page[page.index('id="heatmap-table"'):]
    rows = re.findall(r"<tr><th><a href=\"/tasks/(\d+)\">No\.\d+</a> [^<]* (CPU|GPU)</th>", table)
    gpu_rows = {int(n) for n, kernel in rows if kernel == "GPU"}
    assert gpu_rows == set(ReportedDiff.objects.filter(task__kernel="GPU").values_list("task__number", flat=True))
    assert len(gpu_rows) == tasks_with_reported_diffs("GPU")


def _small_tree(tmp_path, log_text: str):
    return write_report_tree(tmp_path, {
        "reports/ci_ce_gpu/test_history/20250606/error/error_config.txt": 'paddle.pow(Tensor([2],"int32"), 3, )\npaddle.pow(Tensor([3],"int32"), 2, )\n',
        "reports/ci_ce_gpu/test_history/20250606/error/error_log.log": log_text,
    })


GOOD_LOG = '''2025-06-08 11:41:39.073803 GPU 3 1 test begin: paddle.pow(Tensor([2],"int32"), 3, )
[accuracy error] paddle.pow(Tensor([2],"int32"), 3, ) 
Mismatched elements: 1 / 2 (50%)
Max absolute difference among violations: 1
Max relative difference among violations: 0.5
2025-06-08 11:41:40.073803 GPU 3 1 test begin: paddle.pow(Tensor([3],"int32"), 2, )
[accuracy error] backward  paddle.pow(Tensor([3],"int32"), 2, ) 
Mismatched elements: 3 / 3 (100%)
Greatest absolute difference: 4.0 at index (0,) (up to 0.01 allowed)
Greatest relative difference: 1.0 at index (0,) (up to 0.01 allowed)
'''


def test_small_tree_a_bad_block_changes_nothing_stored(tmp_path, capsys):
    wipe_board()
    Task.objects.create(number=133, api="paddle.pow", kernel="GPU")
    Task.objects.create(number=50, api="paddle.pow", kernel="CPU")  # same API, other device: gets nothing
    root = _small_tree(tmp_path, GOOD_LOG)
    import_reports(root)
    first = import_reported_diffs(root)
    assert (first.created, first.unparseable) == (2, [])
    rows = {r.failing_config.config: r for r in ReportedDiff.objects.select_related("failing_config", "task")}
    assert {r.task.number for r in rows.values()} == {133}
    pow3 = rows['paddle.pow(Tensor([3],"int32"), 2, )']
    assert (pow3.direction, pow3.mismatched, pow3.total, pow3.max_abs, pow3.log_line) == ("backward", 3, 3, 4.0, 7)
    before = list(ReportedDiff.objects.order_by("id").values())
    # The second block's numbers become unreadable: reported, and nothing stored changes (its row stays).
    broken = GOOD_LOG.replace("Mismatched elements: 3 / 3 (100%)\n", "").replace("Greatest", "Largest")
    (root / "reports/ci_ce_gpu/test_history/20250606/error/error_log.log").write_text(broken)
    again = import_reported_diffs(root)
    assert [u.split(":")[1] for u in again.unparseable] == ["7"]
    assert again.unparseable[0].startswith("reports/ci_ce_gpu/test_history/20250606/error/error_log.log:7: ")
    assert (again.created, again.updated, again.deleted) == (0, 0, 0)
    assert list(ReportedDiff.objects.order_by("id").values()) == before
    # A corrected log replaces the changed row; the command says what it did.
    (root / "reports/ci_ce_gpu/test_history/20250606/error/error_log.log").write_text(GOOD_LOG.replace("4.0 at", "8.0 at"))
    call_command("import_reports", str(root), "--logs-only")
    out = capsys.readouterr().out
    assert "reported diffs: 0 added, 1 updated, 0 removed, 1 unchanged" in out
    assert ReportedDiff.objects.get(failing_config__config='paddle.pow(Tensor([3],"int32"), 2, )').max_abs == 8.0
    # A block whose config left the log removes its row (every block of that log was read).
    (root / "reports/ci_ce_gpu/test_history/20250606/error/error_log.log").write_text(GOOD_LOG.split("2025-06-08 11:41:40")[0])
    assert import_reported_diffs(root).deleted == 1 and ReportedDiff.objects.count() == 1
    assert FailingConfig.objects.count() == 2  # configs are never touched by the log import
