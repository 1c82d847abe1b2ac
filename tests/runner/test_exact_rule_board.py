"""The exact rule on the board (issue #35 item 4), through the real runner (real paddle and torch in a worker
process): each verdict's exact reading, ULP distance, stability and who is closer stored; the board's badge and
?exact= filter; the task page's cells; /alignment and /api/alignment (rows per API x dtype, the sentence, sorting,
each row's configs, the release); zh and en. And "exact from release X" over stored verdicts of several releases,
a bisecting matrix's unrun release inferred."""
import pytest

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, TestRun
from tracker.services.runs import create_run, execute_run, store_result

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=30.0, per_million_elements=5.0)}
INTERPOLATE = 'paddle.nn.functional.interpolate(Tensor([1, 2, 16, 16],"float16"), list[64,64,], mode="bilinear", ' \
              'align_corners=False, )'
NOISY = 'apitester_test.noisy_paddle(Tensor([64],"float32"), )'
EXACT = 'paddle.maximum(Tensor([8, 4],"float32"), Tensor([8, 4],"float32"), )'


@pytest.fixture
def board_run(monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.exact")
    make_task(7, "paddle.nn.functional.interpolate", [INTERPOLATE])
    make_task(8, "apitester_test.noisy_paddle", [NOISY])
    make_task(9, "paddle.maximum", [EXACT])
    run = create_run("tasks", tasks=[7, 8, 9], lane="cpu", readings=True)  # the readings are asked for
    execute_run(run.pk, workers=1, options=FAST)
    return run


def test_the_runner_stores_the_readings_and_every_page_shows_them(board_run, client):
    interpolate = ConfigResult.objects.get(run=board_run, failing_config__config=INTERPOLATE)
    assert interpolate.status == "pass" and interpolate.exact is False and interpolate.max_ulp > 0
    assert interpolate.rule == "within_tolerance" and interpolate.stable is True
    assert interpolate.nondeterministic == ""
    assert interpolate.closer == "paddle_off" and interpolate.closer_output == "grad x"
    assert interpolate.paddle_rmse > 3 * interpolate.torch_rmse
    noisy = ConfigResult.objects.get(run=board_run, failing_config__config=NOISY)
    assert noisy.exact is False and noisy.stable is False and noisy.nondeterministic == "paddle"
    exact = ConfigResult.objects.get(run=board_run, failing_config__config=EXACT)
    assert exact.exact is True and exact.max_ulp == 0 and exact.rule == "exact"
    assert (exact.stable, exact.closer, exact.paddle_rmse) == (None, "", None)

    # the board: a badge per task, and the filter
    board = client.get("/").content.decode()
    assert 'class="badge exact-all" title="exact on 1 of 1 configs on Paddle 3.3.1">exact 1/1' in board
    assert 'class="badge exact-none"' in board
    only_exact = client.get("/?exact=all").content.decode()
    assert 'id="task-9"' in only_exact and 'id="task-7"' not in only_exact and 'id="task-8"' not in only_exact
    none_exact = client.get("/?exact=none").content.decode()
    assert 'id="task-7"' in none_exact and 'id="task-8"' in none_exact and 'id="task-9"' not in none_exact
    assert "Unknown exact &#x27;most&#x27;" in client.get("/?exact=most").content.decode()
    assert client.get("/api/tasks?exact=all").json()["count"] == 1
    assert client.get("/api/tasks?exact=most").status_code == 400

    # the task page: beside the 1e-2 verdict
    task = client.get("/tasks/7").content.decode()
    assert "within_tolerance" in task and "ULP" in task and "paddle_off" in task and "stable" in task
    assert "exact on 0 of 1 configs on Paddle 3.3.1" in task
    assert "paddle nondeterministic" in client.get("/tasks/8").content.decode()
    rule = client.get("/api/tasks/7").json()["retest"]["latest_verdicts"][0]["exact_rule"]
    assert rule["rule"] == "within_tolerance" and rule["closer"] == "paddle_off" and rule["stable"] is True
    assert rule["max_ulp"] == interpolate.max_ulp and rule["paddle_rmse"] == interpolate.paddle_rmse

    # /api/alignment: one row per API x dtype, the sentence, sorting, the configs of one row
    data = client.get("/api/alignment").json()
    assert data["release"] == "3.3.1" and data["releases"] == ["3.3.1"]
    rows = {(r["api"], r["dtype"]): r for r in data["rows"]}
    bilinear = rows[("paddle.nn.functional.interpolate", "float16")]
    assert (bilinear["configs"], bilinear["exact"], bilinear["within_tolerance"], bilinear["failing"]) == (1, 0, 1, 0)
    assert bilinear["closer"]["paddle_off"] == 1 and bilinear["advice"] == "align_paddle"
    assert bilinear["sentence"] == "Torch is closer: align Paddle"
    assert bilinear["rmse_ratio"] == "inf" or bilinear["rmse_ratio"] > 3
    assert bilinear["max_ulp"] == interpolate.max_ulp == bilinear["median_ulp"]
    assert rows[("apitester_test.noisy_paddle", "float32")]["sentence"] == \
        "Paddle is nondeterministic here: fix that first"
    assert rows[("paddle.maximum", "float32")]["advice"] == "exact"
    assert data["totals"] == {"configs": 3, "exact": 1, "within_tolerance": 2, "failing": 0,
                              "advice": {"fix_nondeterminism": 1, "keep_paddle": 0, "align_paddle": 1,
                                         "align_for_consistency": 0, "not_read": 0, "exact": 1},
                              "decision": {"keep_paddle": 1, "align_torch": 1, "undecided": 1}}
    by_ulp = [r["api"] for r in client.get("/api/alignment?sort=-max_ulp").json()["rows"]]
    assert by_ulp[-1] == "paddle.maximum" and by_ulp == sorted(
        by_ulp, key=lambda api: -next(r["max_ulp"] for r in data["rows"] if r["api"] == api))
    one = client.get("/api/alignment", {"api": "paddle.nn.functional.interpolate", "dtype": "float16"}).json()
    assert [c["config"] for c in one["rows"][0]["config_rows"]] == [INTERPOLATE]
    assert one["rows"][0]["config_rows"][0]["closer"] == "paddle_off"
    assert client.get("/api/alignment?release=2.0.0").status_code == 400
    assert client.get("/api/alignment?sort=bogus").status_code == 400

    # /alignment: the same rows, each linking to its configs; zh
    page = client.get("/alignment").content.decode()
    assert "Torch is closer: align Paddle" in page and "Paddle is nondeterministic here: fix that first" in page
    assert "?release=3.3.1&amp;api=paddle.nn.functional.interpolate&amp;dtype=float16#configs" in page
    configs = client.get("/alignment", {"api": "paddle.nn.functional.interpolate", "dtype": "float16"})
    assert 'id="alignment-configs"' in configs.content.decode() and "/tasks/7#latest-verdicts" in \
        configs.content.decode()
    zh = client.get("/alignment", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Torch 更接近：对齐 Paddle" in zh and "Paddle 在此处不确定：先修复这一点" in zh


def store_exact_grid(number, api, exact_by_release: dict[str, list[bool]], bisected: list[str] = ()):
    """A task with one config per position; one run per release storing pass verdicts exact or not."""
    n = len(next(iter(exact_by_release.values())))
    task = make_task(number, api, [f'{api}(x=Tensor([{i + 2}],"float32"), )' for i in range(n)])
    configs = list(task.failing_configs.order_by("id"))
    if bisected:
        TestRun.objects.create(scope={"kind": "task", "tasks": [number], "mode": "bisect",
                                      "releases": list(bisected)}, lane="cpu", state="done")
    for release, flags in exact_by_release.items():
        run = TestRun.objects.create(scope={"kind": "task", "tasks": [number]}, lane="cpu", release=release,
                                     paddle_version=release, total=n, state="done")
        build = {"paddle_version": release, "paddle_commit": "0" * 40, "torch_version": "2.13.0+cpu"}
        for fc, exact in zip(configs, flags):
            store_result(run, fc, {"status": "pass", "exact": exact, "max_ulp": 0 if exact else 2}, 0.1, build=build)
    return task


def test_exact_from_a_release_is_found_like_fixed_in_with_the_bisection_gap_inferred(client):
    releases = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.3.1"]
    # 3.3.0 is not run: bisection infers it exact from 3.2.0 and 3.3.1 on both sides
    store_exact_grid(21, "paddle.api_21", {"3.0.0": [True, False], "3.1.0": [True, False], "3.2.0": [True, True],
                                           "3.3.1": [True, True]}, bisected=releases)
    store_exact_grid(22, "paddle.api_22", {"3.0.0": [True], "3.3.1": [True]})
    store_exact_grid(23, "paddle.api_23", {"3.2.0": [False, True], "3.3.1": [True, False]})
    board = client.get("/").content.decode()
    assert "exact on 2 of 2 configs on Paddle 3.3.1; exact from release 3.2.0 (not on 3.1.0)" in board
    assert "exact 2/2 ≥3.2.0" in board
    assert "exact on 1 of 1 configs on Paddle 3.3.1; exact on every release tested (3.0.0, 3.3.1)" in board
    assert 'title="exact on 1 of 2 configs on Paddle 3.3.1">exact 1/2</span>' in board
    task = client.get("/tasks/21").content.decode()
    assert "exact from release 3.2.0" in task and "3.3.1: 2 of 2; 3.2.0: 2 of 2; 3.1.0: 1 of 2; 3.0.0: 1 of 2" in task
    from tracker.selectors.alignment import exact_by_task
    assert exact_by_task()[ConfigResult.objects.filter(task__number=21).first().task_id].not_run == ["3.3.0"]
    assert [t["number"] for t in client.get("/api/tasks?exact=partly").json()["tasks"]] == [23]
    # the alignment page reads one release at a time
    old = client.get("/api/alignment?release=3.0.0").json()
    assert old["releases"] == ["3.3.1", "3.2.0", "3.1.0", "3.0.0"]
    assert {r["api"]: (r["exact"], r["within_tolerance"]) for r in old["rows"]} == {
        "paddle.api_21": (1, 1), "paddle.api_22": (1, 0)}
    assert {r["api"]: r["advice"] for r in old["rows"]} == {"paddle.api_21": "not_read", "paddle.api_22": "exact"}
