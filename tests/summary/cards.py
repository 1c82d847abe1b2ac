"""The task states the card is tested on, written through the real write paths (store_result, store_diagnosis,
the report import): a failing task re-tested and diagnosed by the real engine (paddle + torch in this process), a
task fixed in a release, a documented difference re-tested by the real engine, and a GPU task with only what
PaddleAPITest's GPU report logged (and its CPU evidence)."""
from django.utils import timezone

from apitester.diagnosis.diagnose import diagnose_config
from apitester.engine.execute import run_config
from tests.board.conftest import write_report_tree
from tests.factories import make_task
from tests.releases.grids import store_grid
from tests.runner.conftest import FAILING_FORWARD
from tracker.models import TestRun
from tracker.selectors.envs import main_version
from tracker.services.cpu_evidence import create_cpu_evidence_run
from tracker.services.diagnoses import store_diagnosis
from tracker.services.report_import import import_reports
from tracker.services.reported_diffs import import_reported_diffs
from tracker.services.runs import create_run, store_result

FAILING, FIXED, BY_DESIGN, GPU = 301, 302, 303, 304
FAIL, OK = "accuracy_error", "pass"

POW = 'paddle.pow(Tensor([8],"int32"), 3, )'
GPU_LOG = f'''2025-06-08 11:41:39.073803 GPU 3 62856 test begin: {POW}
[accuracy error] {POW} 
 Not equal to tolerance rtol=0.01, atol=0.01
Mismatched elements: 2 / 8 (25.0%)
Greatest absolute difference: 1.0 at index (3,) (up to 0.01 allowed)
Greatest relative difference: 0.0029 at index (3,) (up to 0.01 allowed)
'''


def _engine_run(number: int, config: str):
    """The real engine's verdict on the config, stored for a finished run on the main environment's Paddle."""
    task = make_task(number, config.split("(", 1)[0], [config])
    run = create_run("task", tasks=[number], lane="cpu")
    verdict = run_config(config)
    result = store_result(run, task.failing_configs.get(), verdict.to_dict(), verdict.seconds)
    TestRun.objects.filter(pk=run.pk).update(state="done", done=1, finished_at=timezone.now(),
                                             paddle_version=main_version())
    return task, result


def failing_task(diagnose: bool = True):
    """float16 x 1e6: Paddle overflows to inf where Torch gives the rounded value; diagnosed by the real engine."""
    task, result = _engine_run(FAILING, FAILING_FORWARD)
    if diagnose:
        store_diagnosis(result, diagnose_config(FAILING_FORWARD, draw=result.draw or None, max_trials=40,
                                                max_seconds=30.0))
    return task


def fixed_task():
    """Fails on 3.0.0, passes on 3.1.0 and 3.3.1: fixed in 3.1.0."""
    return store_grid(FIXED, "paddle.clip", {"3.0.0": [FAIL], "3.1.0": [OK], "3.3.1": [OK]})


def by_design_task(config: str):
    """The embedding padding_idx config (task No.42's): a documented difference from the plain Torch call."""
    return _engine_run(BY_DESIGN, config)[0]


def gpu_task(tmp_path, cpu_evidence: bool = True):
    """A GPU task with PaddleAPITest's GPU report for its config and, optionally, a CPU-lane verdict."""
    task = make_task(GPU, "paddle.pow", kernel="GPU")
    root = write_report_tree(tmp_path, {
        "reports/ci_ce_gpu/test_history/20250606/error/error_config.txt": POW + "\n",
        "reports/ci_ce_gpu/test_history/20250606/error/error_log.log": GPU_LOG})
    import_reports(root)
    assert import_reported_diffs(root).created == 1
    if cpu_evidence:
        run = create_cpu_evidence_run([GPU])
        store_result(run, task.failing_configs.get(), {"status": FAIL, "direction": "forward", "max_abs": 1.0,
                                                       "mismatched": 2, "total_elements": 8}, 0.2)
    return task
