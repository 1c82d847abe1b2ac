"""What a finished run proves: fix_verified and regression Events, by the selectors' definitions."""
from __future__ import annotations

from ...models import Source, Task, TestRun
from ...selectors.runs import regressions, task_verification
from ...vocab import EventKind, Lane, VerificationKind
from ..events import record_event


def record_run_outcomes(run: TestRun) -> None:
    """Events for fixes verified and regressions found by this run (once per task and version), for the tasks of
    the run's lane only: a GPU task's configs run on the cpu lane are CPU evidence, never a GPU outcome."""
    kernel = Lane(run.lane).kernel
    tasks = Task.objects.filter(number__in=run.scope.get("tasks", []), kernel=kernel)
    for task in tasks:
        verification = task_verification(task, run.lane)
        if verification.kind == VerificationKind.VERIFIED and not task.events.filter(
                kind=EventKind.FIX_VERIFIED, data__lane=run.lane, data__paddle_version=verification.paddle_version).exists():
            record_event(task=task, kind=EventKind.FIX_VERIFIED, source=Source.RUN, source_ref=f"run {run.pk}",
                         message=verification.text, data={"lane": run.lane, "run": run.pk,
                                                          "paddle_version": verification.paddle_version})
    for item in (r for r in regressions(lane=run.lane, run=run) if r.task.kernel == kernel):
        record_event(task=item.task, kind=EventKind.REGRESSION, source=Source.RUN, source_ref=f"run {run.pk}",
                     message=f"config {item.failing_config_id} passed in run {item.passed_run_id} "
                             f"(Paddle {item.passed_version}) and is {item.status} in run {item.failed_run_id} "
                             f"(Paddle {item.failed_version})",
                     data={"lane": run.lane, "run": run.pk, "failing_config": item.failing_config_id,
                           "passed_run": item.passed_run_id, "status": item.status})
