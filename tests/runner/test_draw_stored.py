"""The input draw a verdict comes from reaches the board (issue 18): a real run of a config that fails only
in the edge draw stores that draw, and the task page's repro command replays exactly it."""
import json
import shlex
import subprocess
import sys

import pytest

from apitester.pool import TimeBudget
from tracker.models import ConfigResult
from tracker.services.runs import create_run, execute_run

from .conftest import PASSING, make_task

pytestmark = pytest.mark.django_db
FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}
# Paddle's float32 log_softmax floors at -64 for a logit far below the row's max: typical draws never go
# there, the edge draw's large magnitudes do (found by the draws, tests/engine/test_specs_nn_functional.py).
EDGE_ONLY = 'paddle.nn.functional.log_softmax(Tensor([10, 100],"float32"), axis=-1, )'


def test_the_failing_draw_is_stored_shown_and_replayed(client):
    task = make_task(5, "paddle.nn.functional.log_softmax", [EDGE_ONLY, PASSING[0]])
    run = create_run("task", tasks=[5], lane="cpu")
    execute_run(run.pk, workers=1, options=FAST)
    by_config = {r.failing_config.config: r for r in ConfigResult.objects.filter(run=run).select_related("failing_config")}
    failing, passing = by_config[EDGE_ONLY], by_config[PASSING[0]]
    assert (failing.status, failing.direction, failing.draw) == ("accuracy_error", "forward", "edge:0@2")
    assert passing.status == "pass" and passing.draw == "typical:0@2"  # with its format: a replay draws its values
    # the time inside Paddle's and Torch's calls travels with the verdict (benchmarks/release_matrix.py)
    assert all(0 < r.framework_seconds <= r.seconds for r in (failing, passing))

    page = client.get(f"/tasks/{task.number}").content.decode()
    assert "in the edge:0@2 input draw" in page
    assert "--draw edge:0@2" in page
    api = client.get(f"/api/tasks/{task.number}").json()["retest"]["latest_verdicts"]
    assert {v["config"]: v["draw"] for v in api} == {EDGE_ONLY: "edge:0@2", PASSING[0]: "typical:0@2"}

    # The command on the page, run as a contributor would, gives the same verdict from the same draw.
    command = shlex.split(f"python -m apitester --accuracy=True --api_config='{EDGE_ONLY}' --draw edge:0@2 --json")
    out = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=300)
    verdict = json.loads(out.stdout.strip().splitlines()[-1])
    assert (verdict["status"], verdict["direction"], verdict["draw"]) == ("accuracy_error", "forward",
                                                                          {"kind": "edge", "seed": 0, "format": 2})
    assert verdict["max_abs"] == pytest.approx(failing.max_abs, rel=1e-6)
