"""A real qcluster worker: it resumes an orphaned run once, advertises its lane, and its heartbeat thread
stops (event set, thread joined) when the cluster shuts its workers down."""
import json
import os
import re
import signal
import subprocess
import sys

from tests.waiting import wait_for

from .test_resume import REPO, manage, query
from .test_resume import env, seeded_db  # noqa: F401  (fixtures: a copy of a migrated, seeded SQLite file)

ORPHAN = ("from tracker.models import TestRun; from tracker.services.runs import create_run; "
          "run = create_run('task', tasks=[2], lane='gpu'); "
          # Its executor is on another host and never reported: dead by RUNNER_STALE_SECONDS.
          "TestRun.objects.filter(pk=run.pk).update(state='running', executor='lost-host:4242', heartbeat_at=None); "
          "print('run', run.pk)")


def test_worker_resumes_an_orphaned_run_once_and_stops_its_heartbeat_on_shutdown(env, tmp_path):
    run_id = int(re.search(r"run (\d+)", manage(env, "shell", "-c", ORPHAN)).group(1))
    log = tmp_path / "qcluster.log"
    with open(log, "w") as out:
        cluster = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                   env={**env, "LOG_LEVEL": "INFO", "Q_WORKERS": "1"}, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # The GPU run goes back to queued (no GPU worker here takes it) with one job on the GPU queue.
        wait_for(lambda: query(env, "SELECT state FROM tracker_testrun WHERE id=?", run_id) == [("queued",)],
                 120, "the orphaned run to be resumed", log)
        wait_for(lambda: query(env, "SELECT lanes FROM tracker_workerheartbeat"), 300, "the worker's heartbeat", log)
        assert [json.loads(row[0]) for row in query(env, "SELECT lanes FROM tracker_workerheartbeat")] == [["cpu"]]
        assert query(env, "SELECT message FROM tracker_testrun WHERE id=?", run_id) == [
            ("resumed after its executor lost-host:4242 died",)]
        assert query(env, "SELECT key FROM django_q_ormq") == [("gpu",)]  # enqueued once, on the GPU queue

        # SIGTERM to the cluster's main process only (as Ctrl-C would): django-q2 sends its workers STOP.
        os.kill(cluster.pid, signal.SIGTERM)
        cluster.wait(120)
    finally:
        if cluster.poll() is None:
            os.killpg(cluster.pid, signal.SIGKILL)
            cluster.wait(30)
    text = log.read_text(errors="replace")
    assert cluster.returncode == 0, text[-3000:]
    assert text.count(f"resumed runs [{run_id}] left by a dead executor") == 1, text[-3000:]
    stopped = re.findall(r"runner-heartbeat-\S+ stopped", text)
    assert len(stopped) == 1, text[-3000:]
    assert "did not stop" not in text
