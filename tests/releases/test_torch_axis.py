"""Torch as an axis (issue #46): a run asked for another Torch (`retest --torch V`) runs only on an env pairing its
release with that Torch, stores only verdicts given against it, never becomes the board's verdict, and feeds the
reference-drift report (`manage.py torch_drift`).

The paired env here is a fake one (tests/releases/fake_envs.py: the main interpreter reporting Torch 2.12.0) and the
API a test spec whose Torch side moved in 2.13.0 (tests/fake_specs/workers.py): what is tested is the path — env
choice, refusal, storage, the selectors that keep it apart — through real workers, the real executor and the real
database. Real Torch builds other than the project's carry ~4 GB of CUDA libraries: they stay out of the suite, and
the drift they show is measured in docs/measurements.md ("#46 the Torch axis")."""
from importlib.metadata import version
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, TestRun
from tracker.selectors.provenance import drift_report
from tracker.selectors.releases import release_grids
from tracker.selectors.runs import latest_results, waiting_reason
from tracker.services.runs import RunError, WrongBuild, create_run, execute_run, requeue_declined_release_runs
from tracker.services.runs import store_result
from tracker.vocab import WaitingReason

from ..runner.conftest import make_task
from .fake_envs import make_fake_envs

pytestmark = pytest.mark.django_db

MAIN = version("paddlepaddle")
OURS = version("torch").split("+")[0]
OTHER = "2.12.0"
PAIR = f"{MAIN}+torch{OTHER}"
MOVED = f'paddle.testonly.torch_moved(x=Tensor([3],"float64"), moved_in="{OURS}", )'
FAST = {"time_budget": TimeBudget(base=60.0, per_million_elements=5.0)}


@pytest.fixture
def paired_env(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("APITESTER_EXTRA_SPECS", "tests.fake_specs.workers")
    settings.PADDLE_ENVS_DIR = str(make_fake_envs(tmp_path / "envs", [MAIN], torch=OTHER))


def test_a_run_against_another_torch_runs_there_stays_off_the_board_and_feeds_the_drift_report(paired_env, client):
    task = make_task(61, "paddle.testonly.torch_moved", [MOVED])
    ours = create_run("task", tasks=[61])
    other = create_run("task", tasks=[61], torch=OTHER)
    assert (other.release, other.torch) == (MAIN, OTHER) and (ours.release, ours.torch) == ("", "")
    execute_run(ours.pk, workers=1, options=FAST)
    execute_run(other.pk, workers=1, options=FAST)
    # Against the project's Torch the reference moved: a failure; against 2.12.0 (the paired env's workers) a pass.
    by_run = {r.run_id: r for r in ConfigResult.objects.all()}
    assert by_run[ours.pk].status == "accuracy_error" and by_run[ours.pk].torch_version.startswith(OURS)
    assert by_run[other.pk].status == "pass" and by_run[other.pk].torch_version == OTHER
    # The board reads the project's Torch only: the newer run against 2.12.0 is neither its latest nor a release cell.
    assert latest_results(lane="cpu", task=task)[task.failing_configs.get().pk].run_id == ours.pk
    grid = release_grids([task.pk])[task.pk]
    assert grid.releases == [MAIN] and [row[MAIN].run_id for row in grid.cells.values()] == [ours.pk]
    # The drift report: the same build and threads, only Torch moved.
    report = drift_report()
    assert [entry["api"] for entry in report] == ["paddle.testonly.torch_moved"]
    assert [torch for torch, _verdict in report[0]["configs"][0]["verdicts"]] == [OTHER, version("torch")]
    out = StringIO()
    call_command("torch_drift", stdout=out)
    assert "paddle.testonly.torch_moved: 1 config(s)" in out.getvalue()
    summary = client.get(f"/api/runs/{other.pk}").json()
    assert summary["torch"] == OTHER and client.get(f"/api/runs/{ours.pk}").json()["torch"] == ""
    page = client.get(f"/runs/{other.pk}").content.decode()
    assert f"This run judges against Torch {OTHER}, not the project's own" in page
    zh = client.get(f"/runs/{other.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"本次运行以 Torch {OTHER} 而非项目自身的 Torch 为参照" in zh


def test_a_torch_no_worker_pairs_is_refused_before_anything_is_created(settings, tmp_path):
    settings.PADDLE_ENVS_DIR = str(tmp_path / "none")
    make_task(62, "paddle.abs", ['paddle.abs(Tensor([3],"float32"), )'])
    with pytest.raises(RunError, match=f"python manage.py paddle_envs add {MAIN} --torch {OTHER}"):
        create_run("task", tasks=[62], torch=OTHER)
    with pytest.raises(CommandError, match="'2.x' is not a Torch release number"):
        call_command("retest", "--task", "62", "--torch", "2.x", stdout=StringIO())
    assert not TestRun.objects.exists()
    # Asking for the project's own Torch by number is a plain run on the main env.
    assert create_run("task", tasks=[62], torch=OURS).torch == ""


def test_a_verdict_given_against_another_torch_than_the_runs_is_never_stored(paired_env):
    task = make_task(63, "paddle.abs", ['paddle.abs(Tensor([3],"float32"), )'])
    config = task.failing_configs.get()
    build = {"paddle_version": MAIN, "paddle_commit": "x"}
    other = create_run("task", tasks=[63], torch=OTHER)
    with pytest.raises(WrongBuild, match=f"judges against Torch {OTHER} but the worker runs Torch {OURS}"):
        store_result(other, config, {"status": "pass"}, 0.1, build={**build, "torch_version": version("torch")})
    ours = create_run("task", tasks=[63])
    with pytest.raises(WrongBuild, match=f"judges against Torch {OURS} but the worker runs Torch {OTHER}"):
        store_result(ours, config, {"status": "pass"}, 0.1, build={**build, "torch_version": OTHER})
    assert not ConfigResult.objects.exists()


def test_a_paired_run_waits_for_and_is_taken_back_by_a_worker_with_the_pair_only(paired_env):
    make_task(64, "paddle.abs", ['paddle.abs(Tensor([3],"float32"), )'])
    run = create_run("task", tasks=[64], torch=OTHER)
    assert waiting_reason(run) == f"waiting for a worker with Paddle {MAIN} and Torch {OTHER}"
    TestRun.objects.filter(pk=run.pk).update(waiting=WaitingReason.RELEASE_WORKER, message=f"declined {PAIR}")
    assert requeue_declined_release_runs([MAIN, "3.0.0"], enqueue=False) == []
    assert requeue_declined_release_runs([MAIN, PAIR], enqueue=False) == [run.pk]
    run.refresh_from_db()
    assert run.message == f"requeued for a worker with Paddle {MAIN} and Torch {OTHER}"
