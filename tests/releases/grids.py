"""Stored per-release verdicts for page tests: real models, verdicts written through store_result."""
from datetime import datetime, timezone

from tracker.models import PullRequest, TestRun
from tracker.services.runs import store_result

from ..runner.conftest import make_task

BUILDS = {"3.0.0": "6ed5dd3833c32c3b21e14b1fb1a71f5a535a0fcc", "3.3.1": "7688495538f4d6c1893f084dd238a402e8f68ab6"}


def store_grid(number, api, statuses_by_release: dict[str, list[str]], kernel="CPU", status="open"):
    """A task with one config per status position; one run per release storing those statuses."""
    n = len(next(iter(statuses_by_release.values())))
    task = make_task(number, api, [f'{api}(x=Tensor([{i + 2}],"float64"), )' for i in range(n)], kernel=kernel,
                     status=status)
    configs = list(task.failing_configs.order_by("id"))
    for release, statuses in statuses_by_release.items():
        run = TestRun.objects.create(scope={"kind": "task", "tasks": [number]}, lane=kernel.lower(), release=release,
                                     paddle_version=release, total=n, state="done")
        build = {"paddle_version": release, "paddle_commit": BUILDS.get(release, "0" * 40), "torch_version": "2.13.0+cpu"}
        for fc, st in zip(configs, statuses):
            verdict = {"status": st, "max_abs": 3.4e38 if st != "pass" else 0.0, "max_rel": 0.9 if st != "pass" else 0.0,
                       "direction": "forward"}
            store_result(run, fc, verdict, 0.1, build=build)
    return task


def merged_pr(task, number=72000, day=(2025, 5, 6), repo="PaddlePaddle/Paddle"):
    pr = PullRequest.objects.create(repo=repo, number=number, state="merged",
                                    merged_at=datetime(*day, tzinfo=timezone.utc))
    pr.tasks.add(task)
    return pr
