"""One run spread over real qclusters on the ORM broker (issue 20, item 3): two clusters (RUNNER_WORKERS=1
each) share the run's shards, one is killed (SIGKILL of its process group) while it holds a shard, a third is
started later, and the run finishes with every config's verdict exactly once.

Real `manage.py qcluster` processes against their own SQLite file (as tests/runner/test_resume.py).
"""
import os
import re
import signal
import subprocess
import sys

from tests.waiting import wait_for

from .test_resume import REPO, manage, query
from .test_resume import env, seeded_db  # noqa: F401  (fixtures: a copy of a migrated, seeded SQLite file)

CONFIGS = 12
SHARD_SIZE = 2
SEED = ("from tests.runner import dbscript; from tests.runner.conftest import make_task; "
        f"make_task(5, 'paddle.testonly.slow', [dbscript.slow_config(i, 2.0) for i in range({CONFIGS})])")


def start_cluster(env, log):
    with open(log, "a") as out:
        return subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                env={**env, "LOG_LEVEL": "INFO", "Q_WORKERS": "1"}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def leases(env, run_id):
    """(index, lease_owner) of the run's leased shards."""
    return query(env, "SELECT \"index\", lease_owner FROM tracker_runshard WHERE run_id=? AND state='leased'", run_id)


def cluster_of(owner, clusters):
    """The cluster whose process group holds the executor `owner` ("host:pid"), or None."""
    try:
        group = os.getpgid(int(owner.rpartition(":")[2]))
    except (ProcessLookupError, ValueError):
        return None
    return next((c for c in clusters if c.pid == group), None)


def kill(cluster):
    try:
        os.killpg(cluster.pid, signal.SIGKILL)  # sentinel, django-q workers and their pool workers
    except ProcessLookupError:
        pass
    cluster.wait(30)


def test_two_qclusters_share_a_run_one_is_killed_and_a_late_one_joins(env, tmp_path):
    env = {**env, "RUNNER_SHARD_SIZE": str(SHARD_SIZE)}
    manage(env, "shell", "-c", SEED)
    log = tmp_path / "qclusters.log"
    clusters = [start_cluster(env, log), start_cluster(env, log)]
    try:
        # Both serve the lane before the run is queued, so both receive its jobs.
        wait_for(lambda: len(query(env, "SELECT name FROM tracker_workerheartbeat")) == 2, 240,
                 "two workers' heartbeats", log)
        run_id = int(re.match(r"run (\d+):", manage(env, "retest", "--task", "5", "--lane", "cpu")).group(1))
        holders = wait_for(lambda: len({cluster_of(o, clusters) for _, o in leases(env, run_id)} - {None}) == 2
                           and leases(env, run_id), 240, "both clusters to hold a shard", log)
        victim = cluster_of(holders[0][1], clusters)
        killed_shard = holders[0][0]
        kill(victim)
        clusters.remove(victim)
        clusters.append(start_cluster(env, log))  # a host added while the run goes on

        wait_for(lambda: query(env, "SELECT state FROM tracker_testrun WHERE id=?", run_id) == [("done",)], 300,
                 "the run to finish", log)
        results = query(env, "SELECT failing_config_id, status FROM tracker_configresult WHERE run_id=?", run_id)
        assert len(results) == CONFIGS and len({r[0] for r in results}) == CONFIGS  # each config once
        assert {r[1] for r in results} == {"pass"}
        shard_rows = query(env, "SELECT \"index\", state, done_by, attempts FROM tracker_runshard WHERE run_id=?",
                           run_id)
        assert len(shard_rows) == CONFIGS // SHARD_SIZE and {r[1] for r in shard_rows} == {"done"}
        assert len({r[2] for r in shard_rows}) >= 2, shard_rows  # finished by more than one executor
        # The killed cluster's shard was taken over (a second lease) and finished by a live executor.
        [(_, _, done_by, attempts)] = [r for r in shard_rows if r[0] == killed_shard]
        assert attempts == 2 and done_by != holders[0][1]
        assert query(env, "SELECT done, total FROM tracker_testrun WHERE id=?", run_id) == [(CONFIGS, CONFIGS)]
    finally:
        for cluster in clusters:
            kill(cluster)
