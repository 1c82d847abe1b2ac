"""kill -9 in the middle of a run, then resume: nothing runs twice, nothing is lost.

These tests run real `manage.py` processes (and a real qcluster) against their own SQLite file, so
the children and this test see the same database.
"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waiting import wait_for

from .conftest import EXTRA_SPECS, FAILING_FORWARD

REPO = Path(__file__).resolve().parents[2]
TOTAL = 12  # dbscript.seed: 10 slow configs + 2 real ones on task 1


def _environment(db: Path) -> dict:
    return {
        **os.environ, "DATABASE_URL": f"sqlite:///{db}", "APITESTER_EXTRA_SPECS": EXTRA_SPECS,
        "RUNNER_WORKERS": "1", "PYTHONPATH": str(REPO), "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory):
    """The migrated SQLite file seeded by dbscript.seed, made once a module (two manage.py processes)."""
    db = tmp_path_factory.mktemp("seeded") / "runner.sqlite3"
    manage(_environment(db), "migrate", "--noinput")
    manage(_environment(db), "shell", "-c", "from tests.runner import dbscript; dbscript.seed()")
    return db


@pytest.fixture
def env(tmp_path, seeded_db):
    """A test's own copy of the seeded database file (sqlite's backup: a consistent copy, WAL included)."""
    db = tmp_path / "runner.sqlite3"
    source, copy = sqlite3.connect(seeded_db), sqlite3.connect(db)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    environment = _environment(db)
    environment["_DB"] = str(db)
    return environment


def manage(env, *args, timeout=300):
    out = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def query(env, sql, *params):
    with sqlite3.connect(env["_DB"], timeout=30) as conn:
        return conn.execute(sql, params).fetchall()


def results_of(env, run_id):
    return query(env, "SELECT id, failing_config_id, created, status FROM tracker_configresult WHERE run_id=? ORDER BY id",
                 run_id)


def summary(env, run_id):
    out = manage(env, "shell", "-c", f"from tests.runner import dbscript; dbscript.summary({run_id})")
    return json.loads(out.split("JSON", 1)[1])


def assert_complete_without_duplicates(env, run_id, before_kill):
    after = results_of(env, run_id)
    config_ids = [row[1] for row in after]
    assert len(after) == TOTAL and len(set(config_ids)) == TOTAL  # no loss, no duplicate
    expected = {row[0] for row in query(env, "SELECT fc.id FROM tracker_failingconfig fc JOIN tracker_task t "
                                             "ON fc.task_id=t.id WHERE t.number=1")}
    assert set(config_ids) == expected
    # What finished before the kill is kept as it was, not run again.
    assert set(before_kill) <= set(after)
    data = summary(env, run_id)
    assert data["state"] == "done" and data["done"] == data["total"] == TOTAL
    return data


def test_kill_minus_9_of_a_retest_process_then_resume(env):
    proc = subprocess.Popen([sys.executable, "manage.py", "retest", "--task", "1", "--lane", "cpu", "--inline"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = int(re.match(r"run (\d+):", proc.stdout.readline()).group(1))
    wait_for(lambda: len(results_of(env, run_id)) >= 3, 240, "three stored results")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    before_kill = results_of(env, run_id)
    assert 3 <= len(before_kill) < TOTAL
    assert query(env, "SELECT state FROM tracker_testrun WHERE id=?", run_id) == [("running",)]

    out = manage(env, "retest", "--resume", "--inline")
    assert f"resumed runs: [{run_id}]" in out
    executed, had = map(int, re.search(r"executed (\d+) configs here \((\d+) already had results\)", out).groups())
    assert had == len(before_kill) and executed == TOTAL - len(before_kill)
    data = assert_complete_without_duplicates(env, run_id, before_kill)
    assert data["counts"] == {"pass": TOTAL - 1, "accuracy_error": 1}
    forward = query(env, "SELECT r.status, r.direction FROM tracker_configresult r JOIN tracker_failingconfig fc "
                         "ON r.failing_config_id=fc.id WHERE fc.config=?", FAILING_FORWARD)
    assert forward == [("accuracy_error", "forward")]


def test_qcluster_killed_mid_run_resumes_on_restart_and_gpu_run_stays_queued(env, tmp_path):
    log = tmp_path / "qcluster.log"

    def start_cluster():
        with open(log, "a") as out:
            return subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                    env={**env, "LOG_LEVEL": "INFO"}, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    cluster = start_cluster()
    try:
        cpu_run = int(re.match(r"run (\d+):", manage(env, "retest", "--task", "1", "--lane", "cpu")).group(1))
        gpu_run = int(re.match(r"run (\d+):", manage(env, "retest", "--task", "2", "--lane", "gpu")).group(1))
        wait_for(lambda: len(results_of(env, cpu_run)) >= 3, 600, "the cluster to store three results", log)
        os.killpg(cluster.pid, signal.SIGKILL)  # the whole cluster: sentinel, workers, pool workers
        cluster.wait(30)
        before_kill = results_of(env, cpu_run)
        assert len(before_kill) < TOTAL
        assert query(env, "SELECT state FROM tracker_testrun WHERE id=?", cpu_run) == [("running",)]

        cluster = start_cluster()  # its worker finds the orphaned run and puts it back on the queue
        wait_for(lambda: query(env, "SELECT state FROM tracker_testrun WHERE id=?", cpu_run) == [("done",)],
                 600, "the resumed run to finish", log)
        assert_complete_without_duplicates(env, cpu_run, before_kill)

        gpu = summary(env, gpu_run)
        assert gpu["state"] == "queued" and gpu["done"] == 0 and gpu["waiting"] == "waiting for a GPU worker"
        assert query(env, "SELECT count(*) FROM tracker_configresult WHERE run_id=?", gpu_run) == [(0,)]
        lanes = query(env, "SELECT lanes FROM tracker_workerheartbeat")
        assert lanes and all(json.loads(row[0]) == ["cpu"] for row in lanes)  # a CPU build never offers gpu
    finally:
        try:
            os.killpg(cluster.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        cluster.wait(30)


def test_cancel_stops_an_executing_run(env):
    proc = subprocess.Popen([sys.executable, "manage.py", "retest", "--task", "1", "--lane", "cpu", "--inline"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_id = int(re.match(r"run (\d+):", proc.stdout.readline()).group(1))
    wait_for(lambda: len(results_of(env, run_id)) >= 2, 240, "two stored results")
    manage(env, "shell", "-c", f"from tracker.models import TestRun; from tracker.services.runs import cancel_run; "
                               f"cancel_run(TestRun.objects.get(pk={run_id}), by='maint')")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and f"run {run_id} cancelled" in out
    stored = len(results_of(env, run_id))
    time.sleep(2)
    assert len(results_of(env, run_id)) == stored < TOTAL  # nothing written after the cancel took effect
    assert query(env, "SELECT state, message FROM tracker_testrun WHERE id=?", run_id) == [("cancelled", "cancelled by maint")]
