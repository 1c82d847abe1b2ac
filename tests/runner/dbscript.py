"""Helpers the multi-process tests run inside `manage.py shell -c` against their own database file."""
import json

from tests.runner.conftest import FAILING_FORWARD, PASSING, make_task

SLOW_CONFIGS = 10


def slow_config(i: int, seconds: float = 0.6) -> str:
    return f'paddle.testonly.slow(x=Tensor([{i + 1}, 3],"float32"), seconds={seconds}, )'


def seed() -> None:
    make_task(1, "paddle.testonly.slow", [slow_config(i) for i in range(SLOW_CONFIGS)] + [PASSING[0], FAILING_FORWARD])
    make_task(2, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")


def summary(run_id: int) -> None:
    from tracker.models import TestRun
    from tracker.selectors.runs import run_summary

    print("JSON" + json.dumps(run_summary(TestRun.objects.get(pk=run_id))))


# Larger than PASSING[0] (4 elements): the task's smallest config is dispatched first (pool.dispatch_order),
# so the passing one has its verdict before the killer takes the executor down.
KILL_EXECUTOR = 'paddle.testonly.kill_executor(x=Tensor([6],"float32"), )'


def seed_kill_executor() -> None:
    make_task(3, "paddle.testonly.kill_executor", [KILL_EXECUTOR, PASSING[0]])


def page(path: str) -> None:
    """Print a page of this database's site as an anonymous visitor sees it."""
    from django.test import Client

    response = Client().get(path)
    print(f"STATUS {response.status_code}")
    print("HTML" + response.content.decode())
