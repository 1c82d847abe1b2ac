"""The run page's "where the worker time went" sums JSON keys in the database (selectors.runs.run_profile): the
same figures on PostgreSQL as on SQLite, a matrix run summing its lanes, verdicts without phases counted apart."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SECRET_KEY, pg_url, postgres_db  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json
from tests.factories import make_task
from tracker.models import ConfigResult, FailingConfig, TestRun
from tracker.selectors.runs import run_profile

task = make_task(901, "paddle.sum", ["paddle.sum(Tensor([2],'float32'), )", "paddle.sum(Tensor([3],'float32'), )"])
first, second = FailingConfig.objects.filter(task=task).order_by("id")
parent = TestRun.objects.create(release="matrix", readings=True)
lanes = [TestRun.objects.create(parent=parent, release=r, readings=True) for r in ("3.0.0", "3.3.1")]
rows = [(lanes[0], first, {"paddle": 0.5, "torch": 0.25}, {"hit": 2}),
        (lanes[0], second, {"paddle": 1.0, "exact": 0.125}, {"miss": 1, "stored": 1}),
        (lanes[1], first, {"paddle": 0.25, "torch": 0.5}, {"hit": 3, "verified": 1}),
        (lanes[1], second, {}, {})]  # stored before phases existed
for run, config, phases, cache in rows:
    ConfigResult.objects.create(run=run, failing_config=config, task=task, status="pass", phases=phases,
                                torch_cache=cache)
print(json.dumps({"matrix": run_profile(parent), "lane": run_profile(lanes[1])}))
"""


def _profile(env: dict) -> dict:
    run = lambda *args: subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                                       text=True, timeout=300)
    migrated = run("migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    done = run("shell", "-c", SCRIPT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


EXPECTED = {
    "matrix": {"configs": 4, "profiled": 3, "seconds": {"paddle": 1.75, "torch": 0.75, "exact": 0.12},
               "torch_cache": {"hit": 5, "miss": 1, "verified": 1, "stored": 1}, "readings": True},
    "lane": {"configs": 2, "profiled": 1, "seconds": {"torch": 0.5, "paddle": 0.25},
             "torch_cache": {"hit": 3, "verified": 1}, "readings": True},
}


def _env(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return {**env, "DATABASE_URL": database_url, "DJANGO_SECRET_KEY": SECRET_KEY, "DJANGO_DEBUG": "1"}


@pytest.mark.postgres
def test_the_run_profile_is_summed_by_postgresql(postgres_db):  # noqa: F811
    assert _profile(_env(pg_url(postgres_db))) == EXPECTED


@pytest.mark.django_db
def test_the_run_profile_is_summed_by_sqlite(capsys):
    exec(SCRIPT, {})  # the same rows in the suite's own SQLite database, in this process
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == EXPECTED
