"""CPU evidence for GPU tasks: a GPU task's configs re-tested on the CPU lane.

No GPU build of Paddle runs on this host, but many GPU-task configs exercise logic that is not
device-specific (integer pow, dtype promotion, index handling, gradient conventions). A *CPU evidence run*
is an ordinary run on the cpu lane whose scope names GPU tasks (scope kind ``cpu_evidence``): the executor,
shards and `store_result` are the runs service's, unchanged. What it stores is evidence about the GPU task —
"fails on CPU too (device-independent)" or "passes on CPU (GPU-kernel-specific, or fixed)" — never a GPU
verdict: every reading of a task's verdict (verification, "fix verified", the release grid, "fixed in",
the board's columns) reads the task's own lane only, and the run's outcomes (fix_verified / regression
events) are recorded for the tasks of the run's lane only (`runs.record_run_outcomes`).

The CPU-lane failures of a GPU task are what diagnosis works on (`diagnosable_tasks`): a GPU task can get a
paste-ready CPU repro.
"""
from __future__ import annotations

from collections import defaultdict

from apitester.pool import config_elements

from ..models import FailingConfig, Task, TestRun
from ..vocab import Kernel, Lane, ScopeKind
from . import shards
from .queue import enqueue_run
from .runs import RunError, check_paddle_flags, check_release, resolve_scope
from .runs.scope import board_numbers_text, task_number_range

SCOPE_KIND = ScopeKind.CPU_EVIDENCE
LANE = Lane.CPU


def _tasks_by_number(numbers) -> list[Task]:
    """The tasks named, in the order given (each once); an unknown number is a RunError."""
    numbers = list(dict.fromkeys(int(n) for n in numbers or []))
    if not numbers:
        raise RunError("name at least one task number")
    lowest, highest = task_number_range()
    if not all(lowest <= n <= highest for n in numbers):  # the database could not even compare such a number
        raise RunError(f"no such task on the board: {board_numbers_text()}")
    found = {t.number: t for t in Task.objects.filter(number__in=numbers)}
    missing = [n for n in numbers if n not in found]
    if missing:
        raise RunError(f"no task No.{', No.'.join(map(str, missing))} on the board: {board_numbers_text()}")
    return [found[n] for n in numbers]


def gpu_tasks(numbers) -> list[Task]:
    """The GPU tasks named, in the order given; a CPU task or an unknown number is a RunError."""
    tasks = _tasks_by_number(numbers)
    cpu = [t for t in tasks if t.kernel != Kernel.GPU]
    if cpu:
        raise RunError(f"No.{cpu[0].number} is a CPU task: re-test it on its own (cpu) lane, without --on-cpu")
    return tasks


def _sized_configs(tasks) -> list[tuple[int, int, int]]:
    """(task id, input elements, config id) of every config of these tasks: each config text parsed once."""
    return [(task_id, config_elements(text), config_id) for config_id, text, task_id in
            FailingConfig.objects.filter(task__in=tasks).values_list("id", "config", "task_id")]


def _smallest_per_task(sized: list[tuple[int, int, int]], per_task: int) -> set[int]:
    by_task: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for task_id, elements, config_id in sized:
        by_task[task_id].append((elements, config_id))
    return {config_id for rows in by_task.values() for _, config_id in sorted(rows)[:per_task]}


def smallest_configs_per_task(tasks, per_task: int) -> list[int]:
    """The ids of each task's ``per_task`` smallest configs (input elements, then id: deterministic)."""
    return sorted(_smallest_per_task(_sized_configs(tasks), per_task))


def bounded_configs(numbers, *, max_elements: int | None = None, smallest: int | None = None
                    ) -> tuple[list[int] | None, dict | None]:
    """The config ids and the scope keys of a bounded CPU-evidence run (None, None: every config): each task's
    ``smallest`` smallest configs, or the configs of at most ``max_elements`` input elements (42,091 GPU-task configs
    take hours on 2 cores, half of them over 600,000 elements), or both; a RunError for a bound that is no number of
    configs or elements, or that leaves nothing."""
    if max_elements is None and smallest is None:
        return None, None
    if smallest is not None and smallest < 1:
        raise RunError("--smallest is a number of configs per task, 1 or more")
    if max_elements is not None and max_elements < 0:
        raise RunError("--max-elements is a number of input elements, 0 or more")
    sized, scope = _sized_configs(gpu_tasks(numbers)), {}
    ids = {config_id for *_, config_id in sized}
    if smallest is not None:
        ids, scope["per_task"] = _smallest_per_task(sized, smallest), smallest
    if max_elements is not None:
        # a task with a config within the bound has its smallest configs there too: the two never leave nothing
        ids &= {config_id for _, elements, config_id in sized if elements <= max_elements}
        scope["max_elements"] = max_elements
        if not ids:
            raise RunError(f"no config of these GPU tasks has at most {max_elements} input elements")
    return sorted(ids), scope


def all_gpu_task_numbers() -> list[int]:
    return list(Task.objects.filter(kernel=Kernel.GPU).order_by("number").values_list("number", flat=True))


def create_cpu_evidence_run(tasks, *, requested_by: str = "", release: str = "", configs: list[int] | None = None,
                            extra_scope: dict | None = None, paddle_flags=None) -> TestRun:
    """A cpu-lane run of these GPU tasks' configs (on `release`, "" = the main environment's Paddle), with these
    Paddle flags (checked against the release's Paddle first: services.runs.check_paddle_flags); ``configs``: only
    these FailingConfig ids of them (the first start's bounded share), else all."""
    release = check_release(release)
    flags = check_paddle_flags(paddle_flags, [release])
    chosen = gpu_tasks(tasks)
    found = FailingConfig.objects.filter(task__in=chosen)
    if configs is not None:
        found = found.filter(id__in=configs)
    total = found.count()
    if total == 0:
        raise RunError("the scope has no failing configs to run (is the board imported?)")
    scope = {"kind": SCOPE_KIND, "tasks": sorted(t.number for t in chosen), **(extra_scope or {})}
    if configs is not None:
        scope["configs"] = sorted(found.values_list("id", flat=True))
    run = TestRun.objects.create(scope=scope, lane=LANE, total=total, requested_by=requested_by, release=release,
                                 paddle_flags=flags)
    shards.ensure_shards(run)
    return run


def start_cpu_evidence_run(tasks, *, requested_by: str = "", release: str = "", configs: list[int] | None = None,
                           extra_scope: dict | None = None, paddle_flags=None) -> TestRun:
    run = create_cpu_evidence_run(tasks, requested_by=requested_by, release=release, configs=configs,
                                  extra_scope=extra_scope, paddle_flags=paddle_flags)
    enqueue_run(run)
    return run


def diagnosable_tasks(kind: str, *, tasks=None, api: str | None = None) -> list[Task]:
    """The tasks a diagnosis scope names: CPU tasks, and — named by number — GPU tasks, whose CPU-lane
    failures (their CPU evidence) are diagnosed like a CPU task's."""
    lowest, highest = task_number_range()
    numbers = [int(n) for n in tasks or []]
    named = kind in (ScopeKind.TASK, ScopeKind.TASKS) and numbers and all(lowest <= n <= highest for n in numbers)
    if named and Task.objects.filter(number__in=numbers, kernel=Kernel.GPU).exists():
        return _tasks_by_number(numbers)
    return resolve_scope(kind, tasks=tasks, api=api, lane=LANE)
