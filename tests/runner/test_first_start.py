"""The first start (services/first_start.py, `manage.py retest --first-start`): every CPU task, then the GPU tasks'
smallest configs on the CPU lane as CPU evidence, each run followed by a bounded diagnosis when it ends — through
the real runner (paddle and torch in worker processes) and the real queued job's work."""
import pytest
from django.core.management import call_command
from django_q.models import OrmQ

from apitester.pool import TimeBudget
from tracker.models import ConfigResult, Diagnosis, TestRun
from tracker.services.diagnoses import diagnose_tasks
from tracker.services.first_start import smallest_configs_per_task
from tracker.services.runs import execute_run
from tracker.tasks import follow_up_finished_run
from tracker.vocab import ScopeKind

from .conftest import make_task

pytestmark = pytest.mark.django_db

FAST = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}
# float16 x 1e6: Paddle overflows to inf where the product is finite — a strict failure on 3.3.1's CPU kernel.
MUL_SMALL = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'
MUL_LARGE = 'paddle.Tensor.__mul__(Tensor([16, 8],"float16"), 1000000.0, )'
PASSING = 'paddle.Tensor.__mul__(Tensor([8, 8],"float32"), 2.0, )'
GPU_CONFIGS = ['paddle.Tensor.__mul__(Tensor([64, 8],"float16"), 1000000.0, )',
               'paddle.Tensor.__mul__(Tensor([2, 8],"float16"), 1000000.0, )',
               'paddle.Tensor.__mul__(Tensor([4, 8],"float32"), 2.0, )']


def _queued_jobs() -> list[dict]:
    return [job.task for job in OrmQ.objects.order_by("id")]


def test_first_start_queues_cpu_tasks_then_the_gpu_tasks_smallest_configs(settings, capsys):
    settings.FIRST_START_GPU_CONFIGS_PER_TASK = 2
    make_task(11, "paddle.Tensor.__mul__", [MUL_SMALL, PASSING])
    gpu = make_task(12, "paddle.Tensor.__mul__", GPU_CONFIGS, kernel="GPU")
    call_command("retest", "--first-start")
    cpu_run, evidence = TestRun.objects.order_by("id")
    assert cpu_run.scope == {"kind": ScopeKind.ALL, "tasks": [11], "diagnose_after": 1} and cpu_run.lane == "cpu"
    # The two smallest of the GPU task's three configs ([2, 8] and [4, 8]; the [64, 8] one is left out), on the
    # cpu lane, as CPU evidence.
    smallest = sorted(gpu.failing_configs.filter(config__in=GPU_CONFIGS[1:]).values_list("id", flat=True))
    assert evidence.scope == {"kind": ScopeKind.CPU_EVIDENCE, "tasks": [12], "configs": smallest, "diagnose_after": 1,
                              "per_task": 2}
    assert evidence.lane == "cpu" and evidence.total == 2
    # Queued in that order: one qcluster takes the CPU tasks' run first.
    assert [job["args"][0] for job in _queued_jobs()] == [cpu_run.pk, evidence.pk]
    out = capsys.readouterr().out
    assert f"run {evidence.pk} queued after it: 2 configs of 1 GPU tasks on the CPU lane (the smallest 2 of each" in out
    call_command("retest", "--first-start")  # once only
    assert TestRun.objects.count() == 2


def test_no_gpu_share_when_the_bound_is_zero(settings):
    settings.FIRST_START_GPU_CONFIGS_PER_TASK = 0
    make_task(11, "paddle.Tensor.__mul__", [MUL_SMALL])
    make_task(12, "paddle.Tensor.__mul__", GPU_CONFIGS, kernel="GPU")
    call_command("retest", "--first-start")
    assert TestRun.objects.get().scope["kind"] == ScopeKind.ALL


def test_smallest_configs_per_task_is_by_input_elements():
    task = make_task(12, "paddle.Tensor.__mul__", GPU_CONFIGS, kernel="GPU")
    ids = {c.config: c.id for c in task.failing_configs.all()}
    assert smallest_configs_per_task([task], 1) == [ids[GPU_CONFIGS[1]]]
    assert smallest_configs_per_task([task], 5) == sorted(ids.values())


def test_a_finished_first_start_run_queues_one_diagnosis_per_failing_task(settings):
    settings.FIRST_START_GPU_CONFIGS_PER_TASK = 0
    make_task(11, "paddle.Tensor.__mul__", [MUL_SMALL, MUL_LARGE, PASSING])
    make_task(13, "paddle.Tensor.__mul__", [PASSING])  # nothing fails: nothing to diagnose
    call_command("retest", "--first-start")
    run = TestRun.objects.get()
    OrmQ.objects.all().delete()  # the run's own job: executed here instead, as the job does
    report = execute_run(run.pk, workers=1, options=FAST)
    assert report.finished_here
    follow_up_finished_run(run.pk)
    run.refresh_from_db()
    assert run.state == TestRun.State.DONE and ConfigResult.objects.filter(run=run).count() == 4
    (job,) = _queued_jobs()
    assert job["func"] == "tracker.tasks.diagnose_tasks_task" and job["args"] == ([11], 1)
    # The queued job's work: one of task 11's two strict failures diagnosed (the smallest), nothing else.
    assert diagnose_tasks(*job["args"]) == {11: 1}
    (diagnosis,) = Diagnosis.objects.all()
    assert diagnosis.failing_config.config == MUL_SMALL and diagnosis.reading == "paddle_off"


def test_a_run_not_of_the_first_start_queues_no_diagnosis(settings):
    from tracker.services.runs import create_run

    make_task(11, "paddle.Tensor.__mul__", [MUL_SMALL])
    run = create_run("task", tasks=[11], lane="cpu")
    follow_up_finished_run(run.pk) if execute_run(run.pk, workers=1, options=FAST).finished_here else None
    assert TestRun.objects.get().state == TestRun.State.DONE and OrmQ.objects.count() == 0
