"""Generate a realistic-looking board state for page benchmarks and chart tests.

Nothing here is copied data: configs are made up from each task's API name, and the run history is
drawn from a seeded RNG (most configs fail, fixes land over time, a few regress).
"""
from __future__ import annotations

import random
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from ..models import ConfigResult, FailingConfig, Kernel, Task, TestRun
from ..vocab import FAILING, ScopeKind, Status
from . import latest

_DTYPES = ("float16", "float32", "float64", "bfloat16", "int64")


def ensure_tasks(count: int = 183) -> list[Task]:
    """The board's tasks if loaded, else `count` made-up tasks (numbered like the board)."""
    tasks = list(Task.objects.order_by("number"))
    if tasks:
        return tasks
    Task.objects.bulk_create(
        Task(number=n, api=f"paddle.synthetic_api_{(n - 1) // 2}", kernel=Kernel.CPU if n % 2 else Kernel.GPU)
        for n in range(1, count + 1)
    )
    return list(Task.objects.order_by("number"))


@transaction.atomic
def generate_results(*, runs: int = 20, results: int = 50_000, seed: int = 0, diff_maps: int = 50) -> dict:
    rng = random.Random(seed)
    tasks = [t for t in ensure_tasks() if not t.locked_reason] or ensure_tasks()
    per_task = max(1, -(-results // (runs * len(tasks))))  # ceil: at least `results` results
    configs: list[FailingConfig] = []
    for task in tasks:
        for i in range(per_task):
            shape = f"[{rng.randint(1, 64)}, {rng.randint(1, 512)}]"
            text = f'{task.api}(Tensor({shape},"{rng.choice(_DTYPES)}"), axis={i % 3}, )'
            configs.append(FailingConfig(task=task, config=text, config_hash=f"synthetic-{task.number}-{i}",
                                         origin_file="synthetic", category="accuracy"))
    FailingConfig.objects.bulk_create(configs, ignore_conflicts=True)
    configs = list(FailingConfig.objects.filter(config_hash__startswith="synthetic-").select_related("task"))
    start = timezone.now() - timedelta(days=runs)
    # Each task gets fixed at some run (or never); a small share of configs regress afterwards.
    fixed_at = {t.id: rng.choice([None, *range(runs)]) for t in tasks}
    made = 0
    for r in range(runs):
        lane = TestRun.Lane.GPU if r % 5 == 4 else TestRun.Lane.CPU
        run = TestRun.objects.create(
            scope={"kind": ScopeKind.ALL_OPEN}, lane=lane, state=TestRun.State.DONE, paddle_version=f"3.3.{r // 4}",
            torch_version="2.13.0", host="synthetic", total=len(configs), done=len(configs),
            started_at=start + timedelta(days=r), finished_at=start + timedelta(days=r, hours=1),
        )
        TestRun.objects.filter(id=run.id).update(created=start + timedelta(days=r))
        batch = []
        for cfg in configs:
            fixed = fixed_at[cfg.task_id]
            failing = fixed is None or r < fixed or rng.random() < 0.02
            status = rng.choice(sorted(FAILING - {Status.TIMEOUT, Status.CRASH})) if failing else Status.PASS
            if rng.random() < 0.01:
                status = Status.UNSUPPORTED
            max_rel = 10 ** rng.uniform(-1, 4) if failing else 10 ** rng.uniform(-8, -3)
            diff_map = None
            if failing and made < diff_maps:
                diff_map = {"values": [[round(rng.random(), 4) for _ in range(16)] for _ in range(16)],
                            "mask": [[rng.random() < 0.02 for _ in range(16)] for _ in range(16)]}
                made += 1
            batch.append(ConfigResult(
                run=run, failing_config=cfg, task_id=cfg.task_id, status=status,
                direction="forward" if status == Status.ACCURACY_ERROR else "", max_abs=max_rel / 10, max_rel=max_rel,
                mismatched=rng.randint(1, 100) if failing else 0, total_elements=1000, seconds=rng.random() / 10,
                diff_map=diff_map,
            ))
        ConfigResult.objects.bulk_create(batch, batch_size=2000)
    latest.rebuild(cfg.id for cfg in configs)  # bulk writes bypass store_result: each config's newest verdict
    return {"tasks": len(tasks), "configs": len(configs), "runs": runs, "results": len(configs) * runs}
