"""Issue 34 items 4 and 5 on the board, through the real write path (the runner's workers judge the configs with
real paddle and torch, `diagnose_tasks` runs `python -m apitester diagnose`): a dtype failure's distinct failure
names both dtypes on the task page (en and zh) and in /api/tasks/<n>; a spec's declared known failure that the run
does not reproduce is listed as stale on the run page."""
import pytest

import tests.engine.diagnosis_test_specs  # noqa: F401  (this process reads the test specs' known failures)
from apitester.pool import TimeBudget
from tracker.models import Diagnosis
from tracker.services.diagnoses import diagnose_tasks
from tracker.services.runs import create_run, execute_run

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
DTYPE = 'apitester_diag.dtype_convention(Tensor([6],"float32"), )'
STALE = ['apitester_diag.known_stale(Tensor([4],"float32"), )', 'apitester_diag.known_stale(Tensor([2, 3],"float32"), )']
STILL = 'apitester_diag.known_still(Tensor([4],"float32"), )'


def test_a_convention_on_the_task_page_and_api_and_a_stale_known_failure_on_the_run_page(client, monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.engine.diagnosis_test_specs")
    make_task(143, "apitester_diag.dtype_convention", [DTYPE])
    make_task(144, "apitester_diag.known_stale", STALE)
    make_task(145, "apitester_diag.known_still", [STILL])
    run = create_run("tasks", tasks=[143, 144, 145], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)

    assert diagnose_tasks([143]) == {143: 1}
    diagnosis = Diagnosis.objects.get()
    assert diagnosis.reading == "convention"
    assert diagnosis.data["reading"]["convention"]["key"] == "dtype: int32 vs int64"
    page = client.get("/tasks/143").content.decode()
    assert "a convention, not a value error: dtype: int32 (Paddle) vs int64 (Torch)" in page
    assert 'class="convention convention-dtype"' in page
    zh = client.get("/tasks/143", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "约定不同，不是数值错误: 数据类型：int32（Paddle）对 int64（Torch）" in zh
    [failure] = client.get("/api/tasks/143").json()["diagnosis"]["distinct_failures"]
    assert failure["reading"] == "convention"
    assert {k: failure["convention"][k] for k in ("kind", "paddle", "torch")} == {
        "kind": "dtype", "paddle": "int32", "torch": "int64"}

    page = client.get(f"/runs/{run.pk}").content.decode()
    assert "Known failures that no longer happen" in page
    assert 'data-api="apitester_diag.known_stale"' in page
    assert "declared accuracy_error, not reproduced by any of 2 configs in scope" in page
    assert 'data-api="apitester_diag.known_still"' not in page  # it still fails as declared
    zh = client.get(f"/runs/{run.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "已不再出现的已知失败" in zh and "范围内的 2 个配置都没有复现" in zh


def test_a_gradient_convention_on_the_task_page_and_api(client):
    """A real 3.3.1 failure: pinv(hermitian=True) of a 2x2 float64 matrix fails strictly in backward; both sides'
    Hermitian parts match the reference's derivative, so the distinct failure names the gradient convention (en, zh,
    API), not a side."""
    config = 'paddle.linalg.pinv(x=Tensor([2, 2],"float64"), hermitian=True, )'
    make_task(146, "paddle.linalg.pinv", [config])
    run = create_run("tasks", tasks=[146], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)
    assert diagnose_tasks([146]) == {146: 1}
    assert Diagnosis.objects.get().reading == "convention"
    page = client.get("/tasks/146").content.decode()
    assert ("a convention, not a value error: gradients equal on their Hermitian part; outside it Paddle returns "
            "the Hermitian part only, Torch more than the Hermitian part") in page
    assert 'class="convention convention-gradient"' in page
    zh = client.get("/tasks/146", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "两边梯度的 Hermitian 部分相同；此外 Paddle 返回仅 Hermitian 部分，Torch 返回Hermitian 部分之外的分量" in zh
    [failure] = client.get("/api/tasks/146").json()["diagnosis"]["distinct_failures"]
    assert failure["reading"] == "convention" and failure["convention"]["kind"] == "gradient"


def test_a_subgradient_convention_reads_in_both_languages():
    from django.utils import translation

    from apitester.vocab import ConventionKind
    from tracker.selectors.diagnoses import convention_shown

    convention = {"kind": ConventionKind.SUBGRADIENT.value, "paddle": "the left derivative",
                  "torch": "the mean of the one-sided derivatives", "kinks": 2,
                  "key": "subgradient: the left derivative vs the mean of the one-sided derivatives"}
    with translation.override("en"):
        shown = convention_shown(convention)
    assert shown["kind_text"] == "subgradient at a kink"
    assert shown["text"] == ("at 2 kinks (a tie, a clamp bound) both gradients lie between the one-sided derivatives: "
                             "Paddle gives the left derivative, Torch the mean of the one-sided derivatives")
    with translation.override("zh-hans"):
        shown = convention_shown(convention)
    assert shown["kind_text"] == "不可导点的次梯度" and shown["paddle"] == "左导数"
    assert shown["text"] == ("在 2 个不可导点（相等值、截断边界）上，两边梯度都在单侧导数之间：Paddle 取左导数，"
                             "Torch 取左右导数的平均值")


def test_an_undefined_convention_and_a_gradient_shape_reading_read_in_both_languages():
    """Issue 44: Paddle 0 against Torch NaN where the forward is not finite (no derivative), and a side named
    because its gradient does not have its input's shape."""
    from django.utils import translation

    from apitester.vocab import ConventionKind, Reading, ReadingSource
    from tracker.selectors.diagnoses import convention_shown, reading_text

    convention = {"kind": ConventionKind.UNDEFINED.value, "paddle": "0", "torch": "NaN", "elements": 1,
                  "key": "undefined: 0 vs NaN"}
    with translation.override("en"):
        shown = convention_shown(convention)
        shape = reading_text(Reading.PADDLE_OFF, ReadingSource.INPUT_SHAPE)
    assert shown["kind_text"] == "no derivative outside the domain"
    assert shown["text"] == ("undefined outside the domain (the forward is not finite at and around 1 elements, so no "
                             "derivative exists): Paddle gives 0, Torch NaN")
    assert shape == "Paddle's gradient does not have its input's shape; Torch's does"
    with translation.override("zh-hans"):
        shown = convention_shown(convention)
        shape = reading_text(Reading.PADDLE_OFF, ReadingSource.INPUT_SHAPE)
    assert shown["kind_text"] == "定义域之外无导数"
    assert shown["text"].startswith("定义域之外无定义") and "Paddle 给出 0，Torch 给出 NaN" in shown["text"]
    assert shape == "Paddle 的梯度形状与其输入的形状不同；Torch 的相同"
    parameter = {"kind": ConventionKind.PARAMETER.value, "paddle": "slope rounded to float32", "torch": "slope at float64",
                 "parameters": "slope=0.2", "rounds": "paddle", "key": "parameter: slope float32 (paddle) vs float64 (torch)"}
    with translation.override("en"):
        shown = convention_shown(parameter)
    assert shown["kind_text"] == "parameter rounded to float32" and shown["text"].startswith(
        "parameter rounded to float32: Paddle computes slope=0.2 at float32, the other side at float64")
    with translation.override("zh-hans"):
        shown = convention_shown(parameter)
    assert shown["kind_text"] == "参数舍入为 float32" and "Paddle 以 float32 计算 slope=0.2" in shown["text"]
