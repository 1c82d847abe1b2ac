"""A fix in the test engine, not in Paddle: configs that pass on every release tested (the release out
before PaddleAPITest's report included) and a PR in PaddleAPITest read as their own class — task page,
/api/tasks/<n>, the board's column and filter, the funnel and /charts/releases — never as a Paddle fix.

Verdicts are written by the runner's store_result (tests/releases/grids.py), the PR arrives as a signed
webhook delivery."""
import json

import pytest

from tests.github import payloads
from tracker.selectors import charts as chart_selectors
from tracker.selectors.releases import FixedIn, as_harness_fix, describe

from .grids import store_grid

OK, FAIL = "pass", "accuracy_error"
pytestmark = pytest.mark.usefixtures("webhook_settings")
ENGINE_PR = 164


def deliver_pr(client, number, title, repo, delivery):
    """An opened PR (the task moves to pr_submitted, so the board's filters below are not decided by a
    completed status)."""
    pull = payloads.pull(number, title, "contributor", repo=repo)
    body = json.dumps(payloads.pull_request_event("opened", pull, repo=repo)).encode()
    response = client.post("/github/webhook", data=body, content_type="application/json",
                           HTTP_X_GITHUB_EVENT="pull_request", HTTP_X_GITHUB_DELIVERY=delivery,
                           HTTP_X_HUB_SIGNATURE_256=payloads.signature(body))
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("answer, refs, kind", [
    (FixedIn("passing", releases=["3.0.0", "3.3.1"]), ["PFCCLab/PaddleAPITest#164"], "harness"),
    (FixedIn("passing", releases=["3.0.0", "3.3.1"]), ["PaddlePaddle/Paddle#73000", "PFCCLab/PaddleAPITest#9"], "harness"),
    # a Paddle PR only: the answer stays "passing"
    (FixedIn("passing", releases=["3.0.0", "3.3.1"]), ["PaddlePaddle/Paddle#73000"], "passing"),
    # not tested on the release out before the report: it may have been fixed in Paddle after it
    (FixedIn("passing", releases=["3.1.0", "3.3.1"]), ["PFCCLab/PaddleAPITest#164"], "passing"),
    # run on one release only: 3.0.0 says nothing of the newer Paddle the report failed on
    (FixedIn("passing", releases=["3.0.0"]), ["PFCCLab/PaddleAPITest#164"], "passing"),
    (FixedIn("passing", releases=["3.3.1"]), ["PFCCLab/PaddleAPITest#164"], "passing"),
    # 3.0.0 only inferred, not run
    (FixedIn("passing", releases=["3.0.0", "3.3.1"], not_run=["3.0.0"]), ["PFCCLab/PaddleAPITest#164"], "passing"),
    # failing on the old release: a Paddle fix, whatever the PR's repository
    (FixedIn("fixed", release="3.3.1", releases=["3.0.0", "3.3.1"]), ["PFCCLab/PaddleAPITest#164"], "fixed"),
])
def test_as_harness_fix_reads_the_rule(answer, refs, kind):
    read = as_harness_fix(answer, refs)
    assert read.kind == kind
    if kind == "harness":
        assert read.harness_pr.startswith("PFCCLab/PaddleAPITest#")
        assert "the fix was in the test engine (PFCCLab/PaddleAPITest#" in describe(read)


@pytest.mark.django_db
def test_a_task_fixed_in_the_test_engine_is_its_own_class_on_every_page(client):
    engine = store_grid(14, "paddle.tril", {"3.0.0": [OK, OK], "3.3.1": [OK, OK]})
    paddle_fix = store_grid(11, "paddle.clip", {"3.0.0": [FAIL, FAIL], "3.3.1": [OK, OK]})
    deliver_pr(client, ENGINE_PR, "[Accuracy diff No.14] tril: compare in the input's dtype", "PFCCLab/PaddleAPITest",
               "d-engine")
    deliver_pr(client, 72001, "[Accuracy diff No.11] fix clip", "PaddlePaddle/Paddle", "d-paddle")
    assert engine.pull_requests.get().repo == "PFCCLab/PaddleAPITest"
    engine.refresh_from_db()
    assert engine.status == "pr_submitted"

    text = f"Paddle agrees with Torch on every release tested (3.0.0, 3.3.1); the fix was in the test engine " \
           f"(PFCCLab/PaddleAPITest#{ENGINE_PR})"
    assert text in client.get("/tasks/14").content.decode()
    assert "修复在测试引擎中" in client.get("/tasks/14", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    api = client.get("/api/tasks/14").json()["releases"]["fixed_in"]
    assert api["kind"] == "harness" and api["harness_pr"] == f"PFCCLab/PaddleAPITest#{ENGINE_PR}"
    assert client.get("/api/tasks/11").json()["releases"]["fixed_in"]["kind"] == "fixed"

    board = client.get("/").content.decode()
    assert "test engine fix" in board
    harness = client.get("/?harness_fix=1").content.decode()
    assert 'id="task-14"' in harness and 'id="task-11"' not in harness
    upstream = client.get("/?fixed_upstream=1").content.decode()
    assert 'id="task-11"' in upstream and 'id="task-14"' not in upstream

    funnel = chart_selectors.funnel()["CPU"]
    assert funnel["harness_fix"] == 1
    releases = client.get("/charts/releases").content.decode()
    # the one Paddle fix is counted in 3.3.1; the engine fix only on its own line
    assert "<tr><td>3.3.1</td><td>1</td><td>0</td><td>4</td><td>4</td></tr>" in releases
    assert "Fixed in the test engine, not in Paddle (never counted above): 1 CPU, 0 GPU tasks" in releases
