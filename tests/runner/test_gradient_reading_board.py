"""A side the float64 gradient check names (issue 34, item 6) on the board: where the float64 oracle has none (a
float64 config), the diagnosis' reading is the gradient check's, the task page says so with its source and
evidence (en and zh), /api/tasks/<n> carries the reading's source, and a Torch gradient read off makes the
config's final verdict torch_suspect with the gradient check named in the evidence and in the event.

The runner judges the configs in its workers (real paddle and torch); each is diagnosed by the engine's
`diagnose_config` (what `python -m apitester diagnose --json` prints, and what tests/runner/test_diagnosis_board.py
runs in that process) in this process, to keep the test fast, and stored as the queued job stores it."""
import pytest

from tracker.models import ConfigResult, Diagnosis, Event
from tracker.services.diagnoses import store_diagnosis
from tracker.services.runs import create_run, execute_run

from .conftest import make_task
from .test_diagnosis_board import FAST

pytestmark = pytest.mark.django_db

EXTRA = "tests.engine.gradient_edge_specs"
# sin(x)/x at x = 0, 1, -1.5, 2, differentiated naively on one side: a NaN gradient at 0 where the derivative is 0
TORCH_NAN = 'apitester_diag.sinc_torch_nan(Tensor([4],"float64"), )'
PADDLE_NAN = 'apitester_diag.sinc_paddle_nan(Tensor([4],"float64"), )'


def test_the_gradient_checks_side_is_the_reading_on_the_task_page_and_the_api(client, monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", EXTRA)
    make_task(151, "apitester_diag.sinc_torch_nan", [TORCH_NAN])
    make_task(152, "apitester_diag.sinc_paddle_nan", [PADDLE_NAN])
    execute_run(create_run("tasks", tasks=[151, 152], lane="cpu").pk, workers=1, options=FAST)
    judged = {r.task.number: r for r in ConfigResult.objects.select_related("task")}
    assert {n: (r.status, r.direction) for n, r in judged.items()} == {151: ("accuracy_error", "backward"),
                                                                       152: ("accuracy_error", "backward")}

    from apitester.diagnosis.diagnose import diagnose_config
    from tests.engine import gradient_edge_specs  # noqa: F401  (registers its apitester_diag.* specs in this process)

    # Torch's gradient is the NaN: the engine reads torch_off from the gradient check -> torch_suspect
    store_diagnosis(judged[151], diagnose_config(TORCH_NAN))
    torch_off = Diagnosis.objects.get(task__number=151)
    assert torch_off.reading == "torch_off" and torch_off.data["reading"]["oracle"] == "gradient_check"
    result = judged[151]
    result.refresh_from_db()
    assert (result.status, result.strict, result.engine_status) == ("torch_suspect", "accuracy_error", "accuracy_error")
    assert result.evidence.startswith("float64 gradient check of grad x: Torch's gradient misses")
    [reread] = Event.objects.filter(task__number=151, kind="verdict_reread")
    assert "accuracy_error → torch_suspect (the float64 gradient check reads Torch off)" in reread.message

    # Paddle's gradient is the NaN: the verdict stays Paddle's failure
    paddle_off = store_diagnosis(judged[152], diagnose_config(PADDLE_NAN))
    assert paddle_off.reading == "paddle_off"
    judged[152].refresh_from_db()
    assert judged[152].status == "accuracy_error" and not judged[152].engine_status

    page = client.get("/tasks/152").content.decode()
    assert "Paddle&#x27;s gradient misses the derivative; Torch&#x27;s matches it (float64 gradient check)" in page
    assert 'data-source="gradient_check"' in page and "float64 gradient check</span>: float64 gradient check of grad x" in page
    assert "nan where the numeric derivative is 0" in page and "side off</span>" not in page
    assert "· side off: paddle" in page
    zh = client.get("/tasks/152", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Paddle 的梯度与导数不符；Torch 的梯度与之相符（float64 梯度检查）" in zh and "哪一方有误" in zh
    assert "有误的一方: paddle" in zh
    page = client.get("/tasks/151").content.decode()
    assert "Torch&#x27;s gradient misses the derivative; Paddle&#x27;s matches it (float64 gradient check; Torch suspect)" in page
    zh = client.get("/tasks/151", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Torch 的梯度与导数不符；Paddle 的梯度与之相符（float64 梯度检查；疑为 Torch 的问题）" in zh

    for number, reading in ((151, "torch_off"), (152, "paddle_off")):
        [failure] = client.get(f"/api/tasks/{number}").json()["diagnosis"]["distinct_failures"]
        assert (failure["reading"], failure["reading_source"]) == (reading, "gradient_check")
        assert failure["reading_evidence"].startswith("float64 gradient check of grad x:")
        assert failure["gradient_check"]["side_off"] == reading.split("_")[0]
