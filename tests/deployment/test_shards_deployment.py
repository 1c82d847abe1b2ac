"""One run spread over qclusters on PostgreSQL + Redis (issue 20, item 3): two clusters (RUNNER_WORKERS=1 each)
take the run's shard jobs off the Redis list, one is killed (SIGKILL of its process group) while it holds a
shard — Redis has no acknowledgement, so its popped jobs are gone — a third starts later, and PostgreSQL ends
with every config's verdict exactly once.

Its own fresh database and Redis namespace (the conftest fixtures are per module); migrate only, no board.
"""
from __future__ import annotations

import os
import re
import signal

import pytest

from .conftest import pg_rows, pg_value, wait_until
from .test_shared_deployment import deployment, manage  # noqa: F401  (deployment: the fixture used below)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

CONFIGS = 12
SHARD_SIZE = 2
SEED = ("from tests.runner import dbscript; from tests.runner.conftest import make_task; "
        f"make_task(5, 'paddle.testonly.slow', [dbscript.slow_config(i, 2.0) for i in range({CONFIGS})])")


def _group_of(owner: str, clusters):
    """The cluster (Proc) whose process group holds the executor `owner` ("host:pid"), or None."""
    try:
        group = os.getpgid(int(owner.rpartition(":")[2]))
    except (ProcessLookupError, ValueError):
        return None
    return next((c for c in clusters if c.popen.pid == group), None)


def test_two_qclusters_share_a_run_through_redis_one_killed_a_late_one_joins(procs, deployment):  # noqa: F811
    db, env, logs = deployment["db"], deployment["env"], deployment["logs"]
    manage(procs, deployment, "migrate", "migrate", "--noinput")
    manage(procs, deployment, "seed-slow", "shell", "-c", SEED)
    clusters = [procs(f"qcluster-{n}", ["qcluster"], env, logs) for n in "ab"]
    wait_until(lambda: pg_value(db, "SELECT count(*) FROM tracker_workerheartbeat") == 2, 240,
               "two workers' heartbeats", context=lambda: "\n".join(c.describe() for c in clusters))

    output = manage(procs, deployment, "retest", "retest", "--task", "5", "--lane", "cpu",
                    extra_env={"RUNNER_SHARD_SIZE": str(SHARD_SIZE)})
    run_id = int(re.search(r"^run (\d+):", output, re.M).group(1))

    def holders():
        rows = pg_rows(db, "SELECT index, lease_owner FROM tracker_runshard WHERE run_id = %s AND state = 'leased' "
                           "ORDER BY index", (run_id,))
        return rows if len({_group_of(owner, clusters) for _, owner in rows} - {None}) == 2 else None

    held = wait_until(holders, 240, "both clusters to hold a shard", interval=0.2,
                      context=lambda: "\n".join(c.describe() for c in clusters))
    killed_shard, killed_owner = held[0]
    victim = _group_of(killed_owner, clusters)
    os.killpg(victim.popen.pid, signal.SIGKILL)
    victim.popen.wait(30)
    late = procs("qcluster-late", ["qcluster"], env, logs)  # a host added while the run goes on

    wait_until(lambda: pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "done", 300,
               "the run to finish", interval=0.5, context=lambda: "\n".join(c.describe() for c in clusters + [late]))
    results = pg_rows(db, "SELECT failing_config_id, status FROM tracker_configresult WHERE run_id = %s", (run_id,))
    assert len(results) == CONFIGS and len({r[0] for r in results}) == CONFIGS  # each config once
    assert {r[1] for r in results} == {"pass"}
    shard_rows = pg_rows(db, "SELECT index, state, done_by, attempts FROM tracker_runshard WHERE run_id = %s",
                         (run_id,))
    assert len(shard_rows) == CONFIGS // SHARD_SIZE and {r[1] for r in shard_rows} == {"done"}
    assert len({r[2] for r in shard_rows}) >= 2, shard_rows
    [(_, _, done_by, attempts)] = [r for r in shard_rows if r[0] == killed_shard]
    assert attempts == 2 and done_by != killed_owner  # taken over after the kill, finished by a live executor
    assert pg_value(db, "SELECT count(*) FROM django_q_ormq") == 0  # the jobs went through Redis
