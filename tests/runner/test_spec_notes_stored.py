"""What a spec says about a verdict reaches the board (issue 18): the declared known Paddle failure it matches
and what the spec compares where it departs from the default tolerance, stored with the verdict by the real
runner (real paddle and torch in a worker process) and shown on the task page and in /api/tasks/<n>."""
import paddle
import pytest

from apitester.pool import TimeBudget
from apitester.specs import get_spec
from tracker.models import ConfigResult
from tracker.services.runs import create_run, execute_run

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
RSQRT_FLOAT16 = 'paddle.rsqrt(Tensor([4],"float16"), )'  # no float16 rsqrt kernel in the 3.3.1 CPU build
NEXTAFTER = 'paddle.nextafter(Tensor([4],"float32"), Tensor([4],"float32"), )'  # compared exactly


def test_the_known_failure_and_the_comparison_note_are_stored_and_shown(client):
    assert paddle.__version__ == "3.3.1", "the rsqrt entry is scoped to 3.3.1"
    make_task(7, "paddle.rsqrt", [RSQRT_FLOAT16, NEXTAFTER])
    run = create_run("task", tasks=[7], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)

    rsqrt = ConfigResult.objects.get(run=run, failing_config__config=RSQRT_FLOAT16)
    assert rsqrt.status == "paddle_error"  # documented, never excused
    assert rsqrt.known_failure["reason"] == get_spec("paddle.rsqrt").known_failures[0].reason
    assert rsqrt.known_failure["releases"] == "==3.3.1" and rsqrt.known_failure["dtypes"] == ["float16"]
    assert rsqrt.comparison is None
    nextafter = ConfigResult.objects.get(run=run, failing_config__config=NEXTAFTER)
    assert nextafter.status == "pass" and nextafter.known_failure is None
    assert nextafter.comparison["note"] == get_spec("paddle.nextafter").comparison.note

    page = client.get("/tasks/7").content.decode()
    assert "known Paddle failure (==3.3.1):</span> the CPU build has no float16 rsqrt kernel" in page
    assert "compared:</span> float32/float64 compared exactly" in page
    zh = client.get("/tasks/7", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "已知的 Paddle 问题" in zh and "比较方式" in zh

    rows = {row["config"]: row for row in client.get("/api/tasks/7").json()["retest"]["latest_verdicts"]}
    assert rows[RSQRT_FLOAT16]["known_failure"]["reason"] == "the CPU build has no float16 rsqrt kernel"
    assert "known_failure" not in rows[NEXTAFTER]
    assert rows[NEXTAFTER]["comparison"]["note"].startswith("float32/float64 compared exactly")
