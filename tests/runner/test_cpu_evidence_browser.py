"""A GPU task's page in a real browser (chromium): what PaddleAPITest's GPU report logged for its config, and its
CPU evidence — with the task's own GPU verdict still "not re-tested yet" (no GPU produced one)."""
import pytest

from tests.board.conftest import write_report_tree
from tests.factories import make_task
from tracker.services.cpu_evidence import create_cpu_evidence_run
from tracker.services.report_import import import_reports
from tracker.services.reported_diffs import import_reported_diffs
from tracker.services.runs import store_result

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

POW = 'paddle.pow(Tensor([8],"int32"), 3, )'
LOG = f'''2025-06-08 11:41:39.073803 GPU 3 62856 test begin: {POW}
[accuracy error] {POW} 
 Not equal to tolerance rtol=0.01, atol=0.01
Mismatched elements: 2 / 8 (25.0%)
Greatest absolute difference: 1.0 at index (3,) (up to 0.01 allowed)
Greatest relative difference: 0.0029 at index (3,) (up to 0.01 allowed)
'''


def test_gpu_task_page_shows_reported_diff_and_cpu_evidence(live_server, page, tmp_path):
    task = make_task(133, "paddle.pow", kernel="GPU")
    root = write_report_tree(tmp_path, {"reports/ci_ce_gpu/test_history/20250606/error/error_config.txt": POW + "\n",
                                        "reports/ci_ce_gpu/test_history/20250606/error/error_log.log": LOG})
    import_reports(root)
    assert import_reported_diffs(root).created == 1
    run = create_cpu_evidence_run([133])
    store_result(run, task.failing_configs.get(), {"status": "accuracy_error", "direction": "forward", "max_abs": 1.0,
                                                   "mismatched": 2, "total_elements": 8}, 0.2)

    page.goto(f"{live_server.url}/tasks/133")
    row = page.locator("table.configs tr", has=page.locator("code.config", has_text="paddle.pow"))
    assert row.locator(".reported-label").inner_text().strip() == "reported by PaddleAPITest (GPU, 2025-06-06)"
    assert "values · forward · 2 of 8 elements differ · max abs 1 · max rel 0.0029" in " ".join(
        row.locator(".reported-diff").inner_text().split())
    evidence = page.locator("#cpu-evidence")
    assert evidence.locator("li").first.inner_text().startswith(
        "fails on CPU too (device-independent): 1 of 1 configs re-tested on the CPU lane")
    evidence.locator("summary").click()
    assert evidence.locator("details code.config").inner_text() == POW
    assert "not re-tested yet" in page.locator("#retest").inner_text()  # the GPU lane: no GPU verdict
    assert "fix verified" not in page.locator("body").inner_text().lower()
    assert page.console_errors == []
