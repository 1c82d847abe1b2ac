"""Task No.42 (embedding padding_idx) re-tested through the runner: a documented difference from
Torch is stored with both layers and never reads "fix verified" (issue 11).  Real paddle and torch
in real worker processes; the configs are read from the PaddleAPITest reports at run time."""
import pytest

from apitester.pool import TimeBudget, close_idle_pools
from apitester.reports import iter_config_lines, reports_dir
from tracker.models import ConfigResult, Event, PullRequest
from tracker.figures.cells import CELL_DIFFERS
from tracker.figures.charts import task_config_heatmap
from tracker.selectors.charts import task_config_matrix, verified_task_ids
from tracker.selectors.runs import regressions, task_verification
from tracker.services.runs import create_run, execute_run

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
EMBEDDING = "paddle.nn.functional.embedding("


def embedding_padding_configs(n: int) -> list[str]:
    """The first n CPU-report embedding configs with padding_idx=0 (the one issue 11 names first)."""
    lines = sorted({line for _, _, line in iter_config_lines([reports_dir() / "reports" / "ci_ce_cpu"])
                    if line.startswith(EMBEDDING) and "padding_idx=0," in line})
    named = [line for line in lines if 'Tensor([12, 7],"int32"), weight=Tensor([99, 32],"float32")' in line]
    if not named:
        pytest.fail("the embedding padding_idx=0 configs are missing: set PADDLEAPITEST_REPORTS")
    return named[:1] + [line for line in lines if line not in named][: n - 1]


@pytest.fixture(autouse=True)
def warm_pool(settings):
    """Both tests' runs on one warm pool (RUNNER_WARM_POOLS): its worker imports paddle and torch once for the
    module; closed when the module ends (a module-scoped finaliser below)."""
    settings.RUNNER_WARM_POOLS = 1


@pytest.fixture(scope="module", autouse=True)
def close_the_warm_pool():
    close_idle_pools()
    yield
    close_idle_pools()


def test_task_42_after_a_retest_is_a_documented_difference_not_a_verified_fix(client):
    configs = embedding_padding_configs(3)
    task = make_task(42, "paddle.nn.functional.embedding", configs)
    pr = PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=73445, state="closed",
                                    title="fix embedding padding_idx forward")
    pr.tasks.add(task)

    run = create_run("task", tasks=[42], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)
    run.refresh_from_db()
    assert run.state == "done" and run.done == len(configs)

    results = list(ConfigResult.objects.filter(run=run))
    assert {r.status for r in results} == {"documented_difference"}
    for r in results:
        assert (r.strict_status, r.strict_direction) == ("accuracy_error", "forward")
        assert r.adapted_status == "pass" and r.layers_differ
        assert [a["kind"] for a in r.adaptations] == ["documented_semantics"]
        assert r.max_abs > 0.01  # the strict layer's figures

    verification = task_verification(task)
    assert verification.kind == "by_design"
    assert verification.text.startswith("differs from Torch by design: Paddle documents an all-zero output row")
    assert "fix verified" not in verification.text
    assert not Event.objects.filter(task=task, kind="fix_verified").exists()
    assert task.pk not in verified_task_ids()
    assert regressions(task=task) == []
    # The task page's configs × runs grid paints a documented difference as the release grid does (purple),
    # not grey ("no verdict") nor red.
    grid = task_config_heatmap(task_config_matrix(task))
    assert [value for row in grid.data[0].z for value in row] == [CELL_DIFFERS] * len(configs)

    page = client.get("/tasks/42").content.decode()
    assert "fix verified" not in page
    assert "differs from Torch by design" in page and "PaddlePaddle/Paddle#73445" in page
    assert "strict (plain Torch call)" in page and "documented_semantics" in page

    data = client.get("/api/tasks/42").json()["retest"]
    assert data["verification"]["kind"] == "by_design"
    assert data["verification"]["documented_differences"] == len(configs)
    row = data["latest_verdicts"][0]
    assert row["status"] == "documented_difference" and row["layers_differ"]
    assert row["strict"]["status"] == "accuracy_error" and row["adapted"]["status"] == "pass"

    summary = client.get(f"/api/runs/{run.pk}").json()
    assert summary["counts"] == {"documented_difference": len(configs)}
    assert summary["layers"] == {"strict": {"accuracy_error": len(configs)}, "adapted": {"pass": len(configs)}}
    run_page = client.get(f"/runs/{run.pk}").content.decode()
    assert "strict (plain Torch call)" in run_page

    zh = client.get("/tasks/42", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "与 Torch 的差异属设计如此" in zh and "严格（直接调用 Torch）" in zh


def test_a_plain_spec_stores_one_layer(client):
    config = 'paddle.logit(x=Tensor([4],"float64"), )'
    task = make_task(7, "paddle.logit", [config])
    run = create_run("task", tasks=[7], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)
    r = ConfigResult.objects.get(run=run)
    assert (r.status, r.strict_status, r.adapted_status, r.adaptations) == ("pass", "pass", "", [])
    assert not r.layers_differ
    assert task_verification(task).kind == "verified"
