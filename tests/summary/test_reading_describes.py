"""Which config a diagnosis' reading describes, on the board (issue 44, items 3 and 8): the task card, the task page,
/api/tasks/<n> and /api/v1/tasks/<n> show a repro's reading as the repro's ("read on the shrunk repro, not the
reported config"), never as the reported config's, in en and zh; a reading of the reported config says so and names
the repro's differing reading beside it.

The diagnoses are the real engine's JSON (`diagnose_config`, what `python -m apitester diagnose --json` prints), made
once per module and stored as the queued job stores them (`store_diagnosis`), beside the real engine's verdict."""
import pytest
from django.utils import timezone

from apitester.diagnosis.diagnose import diagnose_config
from apitester.engine.execute import run_config
from apitester.inputs import Draw
from tracker.models import TestRun
from tracker.services.diagnoses import store_diagnosis
from tracker.services.runs import create_run, store_result

from ..factories import make_task

pytestmark = pytest.mark.django_db

# the board's 1.3 M-element bfloat16 sum on its edge draw: read itself, Paddle off (its 80-element repro: both off)
BIG_SUM = 'paddle.Tensor.sum(Tensor([80, 128, 128],"bfloat16"), )'
# the same sum as paddle.sum, diagnosed with the reported config over the bound it is read at: the repro's reading
OVER_BOUND = 'paddle.sum(Tensor([80, 128, 128],"bfloat16"), )'
EDGE = Draw("edge", 0, 2)
LABEL = "read on the shrunk repro, not the reported config"
LABEL_ZH = "读自缩小后的复现输入，而非报告的配置"


@pytest.fixture(scope="module")
def engine_answers() -> dict:
    return {BIG_SUM: diagnose_config(BIG_SUM, draw=EDGE, max_seconds=30),
            OVER_BOUND: diagnose_config(OVER_BOUND, draw=EDGE, max_seconds=30, reported_max_elements=1000)}


def _diagnosed(number: int, config: str, data: dict):
    """The task with the real engine's verdict on the draw, and the engine's diagnosis stored beside it."""
    task = make_task(number, config.split("(", 1)[0], [config])
    run = create_run("task", tasks=[number], lane="cpu")
    verdict = run_config(config, draw=EDGE)
    result = store_result(run, task.failing_configs.get(), verdict.to_dict(), verdict.seconds)
    TestRun.objects.filter(pk=run.pk).update(state="done", done=1, finished_at=timezone.now())
    return store_diagnosis(result, data)


def test_a_reading_of_the_reported_config_says_so_and_names_the_repros_beside_it(client, engine_answers):
    stored = _diagnosed(301, BIG_SUM, engine_answers[BIG_SUM])
    assert stored.reading == "paddle_off"  # the final reading, not the shrink's both_off
    for prefix in ("/api", "/api/v1"):
        answer = client.get(f"{prefix}/tasks/301").json()
        [failure] = answer["diagnosis"]["distinct_failures"]
        assert (failure["reading"], failure["reading_describes"], failure["repro_reading"]) == (
            "paddle_off", "reported", "both_off")
        assert LABEL not in failure["reading_text"]
        assert answer["summary"]["off_describes"] == "reported" and LABEL not in answer["summary"]["text"]
    page = client.get("/tasks/301").content.decode()
    assert 'data-describes="reported"' in page and "the reported config and its failing draw" in page
    assert "the shrunk repro reads both_off" in page and LABEL not in page
    # the reported config's errors (Paddle 240 off the exact sum's -482) beside the repro's per-output readings
    reported = engine_answers[BIG_SUM]["reading"]
    assert f'class="reported-errors"><code>paddle_off</code>' in page
    assert f"Paddle RMSE {reported['paddle']['rmse']}, max abs {reported['paddle']['max_abs']}" in page
    assert "output 0 <span class=\"muted\">(shrunk repro)</span>" in page


def test_a_repros_reading_is_labelled_as_the_repros_on_the_card_the_page_and_the_api(client, engine_answers):
    data = engine_answers[OVER_BOUND]
    assert data["reading"]["describes"] == "repro"  # the engine's word: the reported config was over the bound
    _diagnosed(302, OVER_BOUND, data)
    for prefix in ("/api", "/api/v1"):
        answer = client.get(f"{prefix}/tasks/302").json()
        [failure] = answer["diagnosis"]["distinct_failures"]
        assert failure["reading_describes"] == "repro" and failure["reading_text"].endswith(f"({LABEL})")
        assert "over the 1,000 it is read at" in failure["reading_describes_why"]
        summary = answer["summary"]
        assert summary["off_describes"] == "repro" and LABEL in summary["off_text"]
        assert f"({LABEL})." in summary["diff"]  # the verdict's numbers, then the repro's distance, labelled
    page = client.get("/tasks/302").content.decode()
    assert 'data-describes="repro"' in page and "the shrunk repro, not the reported config" in page
    assert page.count(LABEL) >= 2  # the distinct failure's heading and the card
    zh = client.get("/tasks/302", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert LABEL_ZH in zh and "缩小后的复现输入，而非报告的配置" in zh and LABEL not in zh
