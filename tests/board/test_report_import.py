"""import_reports against the real PaddleAPITest files (imported once for this module) and a small tree."""
import datetime as dt
import re
import time
from collections import defaultdict

import pytest
from django.core.management import call_command

from apitester.reports import discover_report_files
from tracker.models import Event, FailingConfig, Task
from tracker.services.board_import import load_board_file
from tracker.services.report_import import config_hash, import_reports

from .conftest import REPORTS, SEED, needs_reports, needs_seed, wipe_board, write_report_tree

D = dt.date


def _files_by_config(kernel_dir: str):
    """Independent reading of the files: config → [(date, relative path)] (no shared code with the importer)."""
    seen = defaultdict(list)
    for report in discover_report_files(REPORTS):
        if kernel_dir not in report.rel:
            continue
        for line in report.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen[line.strip()].append((report.date, report.rel))
    return seen


@pytest.fixture(scope="module")
def imported(django_db_setup, django_db_blocker):
    if not SEED.is_file() or not (REPORTS / "reports").is_dir():
        pytest.fail(f"seed board ({SEED}) or PaddleAPITest reports ({REPORTS}/reports) missing "
                    "(set PADDLEAPITEST_REPORTS)")
    with django_db_blocker.unblock():
        wipe_board()
        load_board_file(SEED)
        started = time.monotonic()
        first = import_reports(REPORTS)
        first_seconds = time.monotonic() - started
        events = Event.objects.count()
        started = time.monotonic()
        second = import_reports(REPORTS)
        second_seconds = time.monotonic() - started
        events_after_second = Event.objects.count()
    yield {"first": first, "second": second, "seconds": (first_seconds, second_seconds),
           "events": (events, events_after_second)}
    with django_db_blocker.unblock():
        wipe_board()


pytestmark = [pytest.mark.django_db, needs_seed, needs_reports]


def test_full_import_is_idempotent_and_quick(imported):
    first, second = imported["first"], imported["second"]
    assert first.created == first.attached == FailingConfig.objects.count() > 40000
    assert (second.created, second.updated, second.unchanged) == (0, 0, first.attached)
    before, after = imported["events"]
    assert before == after  # nothing changed, nothing recorded
    first_seconds, second_seconds = imported["seconds"]
    print(f"report import: first {first_seconds:.1f} s, again {second_seconds:.1f} s, {first.attached} configs")
    assert first_seconds < 60 and second_seconds < 60
    assert first.malformed == []
    assert first.configs_read == first.attached + first.without_task_configs


def test_aliases_attach_dunder_configs(imported):
    mul = Task.objects.get(api="paddle.Tensor.mul", kernel="CPU")
    configs = list(mul.failing_configs.values_list("config", flat=True))
    assert configs and all(c.startswith("paddle.Tensor.__mul__(") for c in configs)
    getitem = Task.objects.get(api="paddle.Tensor.getitem", kernel="GPU")
    assert getitem.failing_configs.exists()
    assert all(c.startswith("paddle.Tensor.__getitem__(") for c in getitem.failing_configs.values_list("config", flat=True))
    # There is no CPU getitem task, so CPU __getitem__ configs are listed as without a task.
    assert imported["first"].without_task[("CPU", "paddle.Tensor.__getitem__")] > 0


def test_kernels_route_configs_and_counts_match_the_files(imported):
    cpu_files = _files_by_config("ci_ce_cpu")
    gpu_files = _files_by_config("ci_ce_gpu")
    for number in (1, 11, 57):  # CPU tasks
        task = Task.objects.get(number=number)
        expected = {c for c in cpu_files if c.startswith(task.api + "(")}
        stored = set(task.failing_configs.values_list("config", flat=True))
        assert stored == expected and stored
        assert all(o["file"].startswith(("reports/ci_ce_cpu/", "history/ci_ce_cpu/")) for fc in task.failing_configs.all() for o in fc.origins)
    task = Task.objects.get(number=28)  # paddle.linalg.norm GPU
    assert set(task.failing_configs.values_list("config", flat=True)) == {c for c in gpu_files if c.startswith("paddle.linalg.norm(")}


def test_locked_dtype_tasks_take_the_dtype_configs(imported):
    plain, dtype = Task.objects.get(number=16), Task.objects.get(number=167)  # paddle.cumsum GPU twice
    assert plain.api == dtype.api == "paddle.cumsum" and dtype.locked_reason
    assert set(dtype.failing_configs.values_list("category", flat=True)) == {"dtype_diff"}
    assert "dtype" not in "".join(plain.failing_configs.values_list("category", flat=True))
    assert plain.failing_configs.exists()


def test_dates_and_gone_from_the_report(imported):
    files = _files_by_config("ci_ce_cpu")
    task = Task.objects.get(number=11)  # paddle.clip CPU: has history over months
    for fc in task.failing_configs.all():
        dates = sorted(d for d, _ in files[fc.config])
        assert (fc.first_seen, fc.last_seen) == (dates[0], dates[-1])
        in_newest = any(rel == "reports/ci_ce_cpu/error_config.txt" for _, rel in files[fc.config])
        assert fc.in_latest_report == in_newest
        assert fc.config_hash == config_hash(fc.config)
        if not in_newest:
            assert fc.gone_since and fc.gone_since > fc.last_seen
    config = 'paddle.cumsum(Tensor([1, 32000],"float16"), axis=-1, )'
    fc = FailingConfig.objects.get(task__number=16, config=config)
    assert (fc.first_seen, fc.last_seen, fc.in_latest_report, fc.gone_since) == (D(2025, 3, 19), D(2025, 5, 28), False, D(2025, 6, 6))
    assert fc.origin_file == "reports/ci_ce_gpu/test_history/20250528/error_config.txt"
    assert {o["file"] for o in fc.origins} >= {"history/ci_ce_gpu/2025-04-28_780c749c.txt", "reports/ci_ce_gpu/test_history/20250319/error_config.txt"}
    newest = FailingConfig.objects.filter(task__kernel="CPU", in_latest_report=True)
    assert newest.count() == len([c for c, seen in files.items() if any(rel == "reports/ci_ce_cpu/error_config.txt" for _, rel in seen)
                                  and Task.objects.filter(kernel="CPU", api=re.match(r"[\w.]+", c).group(0).replace("__mul__", "mul")).exists()])
    assert set(newest.values_list("origin_date", flat=True)) == {D(2025, 8, 8)}


def test_configs_without_a_task_are_counted_and_tasks_without_configs_listed(imported):
    result = imported["first"]
    cpu_files = _files_by_config("ci_ce_cpu")
    topk = len({c for c in cpu_files if c.startswith("paddle.topk(")})
    assert result.without_task[("CPU", "paddle.topk")] == topk > 0
    assert not Task.objects.filter(api="paddle.topk").exists()
    assert not any(api == "paddle.Tensor.__mul__" for _, api in result.without_task)
    # Every task has configs: task 140 (paddle.Tensor.matmul, CPU) gets those traced as __matmul__.
    assert result.tasks_without_configs == []
    assert FailingConfig.objects.filter(task__number=140).count() > 0
    summary = Event.objects.get(kind="report_import")
    assert {"kernel": "CPU", "api": "paddle.topk", "configs": topk} in summary.data["without_task"]


def test_board_lists_the_apis_without_a_task(imported, client):
    html = client.get("/").content.decode()
    section = html[html.index('class="panel without-task"'):]
    assert f"<code>paddle.topk</code></td><td class=\"num\">{imported['first'].without_task[('CPU', 'paddle.topk')]}</td>" in section
    assert f"Report configs of {len(imported['first'].without_task)} APIs that have no task on the board" in section


def test_command_prints_the_lists(imported, capsys):
    call_command("import_reports", str(REPORTS))
    out = capsys.readouterr().out
    assert "0 added, 0 updated" in out
    assert re.search(r"^  CPU paddle\.topk: \d+$", out, re.M)
    assert "0 tasks without any failing config" in out


def test_tasks_without_configs_are_listed(tmp_path, capsys):
    wipe_board()
    load_board_file(SEED)
    report = tmp_path / "reports" / "ci_ce_cpu"
    report.mkdir(parents=True)
    (report / "error_config.txt").write_text('paddle.add_n(list[Tensor([2],"float32"),], )\n')
    call_command("import_reports", str(tmp_path))
    out = capsys.readouterr().out
    assert "182 tasks without any failing config:" in out
    assert "  No.2 paddle.all GPU" in out and "  No.1 paddle.add_n" not in out


def test_task_page_paginates_thousands_of_configs(imported, client):
    task = Task.objects.get(number=180)  # paddle.where GPU: hundreds of dtype configs
    total = task.failing_configs.count()
    assert total > 100
    page = client.get(f"/tasks/{task.number}").content.decode()
    assert page.count('<code class="config">') == 50
    assert f"page 1 of {(total + 49) // 50} ({total} configs)" in page
    board = client.get("/?sort=-configs").content.decode()
    first_row = re.search(r'<tr id="task-(\d+)">', board).group(1)
    busiest = max(Task.objects.all(), key=lambda t: t.failing_configs.count())
    assert int(first_row) == busiest.number


@pytest.mark.django_db
def test_small_tree_import_and_reimport(tmp_path):
    wipe_board()
    Task.objects.create(number=1, api="paddle.abs", kernel="CPU")
    Task.objects.create(number=2, api="paddle.Tensor.mul", kernel="GPU")
    Task.objects.create(number=3, api="paddle.abs", kernel="GPU")
    root = write_report_tree(tmp_path, {
        "reports/ci_ce_cpu/error_config.txt": 'paddle.abs(Tensor([2],"float32"), )\npaddle.sin(Tensor([2],"float32"), )\nbroken line\n',
        "reports/ci_ce_gpu/test_history/20250606/error/error_config.txt": 'paddle.Tensor.__mul__(Tensor([2],"float32"), Tensor([2],"float32"), )',
        "reports/ci_ce_gpu/test_history/20250101/error_config.txt": 'paddle.abs(Tensor([9],"float32"), )\n',
    })
    result = import_reports(root)
    assert (result.created, result.attached) == (3, 3)
    assert result.malformed == ["reports/ci_ce_cpu/error_config.txt:3: does not start with an API call `name(` — 'broken line'"]
    assert dict(result.without_task) == {("CPU", "paddle.sin"): 1}
    gone = FailingConfig.objects.get(task__number=3)
    assert (gone.in_latest_report, gone.gone_since) == (False, D(2025, 6, 6))
    assert Task.objects.get(number=2).failing_configs.get().category == "accuracy"
    # A changed file updates the stored config and records an event on its task only.
    (root / "reports/ci_ce_gpu/test_history/20250701/error").mkdir(parents=True)
    (root / "reports/ci_ce_gpu/test_history/20250701/error/error_config.txt").write_text('paddle.abs(Tensor([9],"float32"), )\n')
    events = set(Event.objects.values_list("id", flat=True))
    again = import_reports(root)
    assert (again.created, again.updated) == (0, 2)  # abs GPU is back; __mul__ is now gone
    new_events = Event.objects.exclude(id__in=events)
    assert sorted(e.task.number for e in new_events if e.task) == [2, 3]
    gone.refresh_from_db()
    assert gone.in_latest_report and gone.last_seen == D(2025, 7, 1)
