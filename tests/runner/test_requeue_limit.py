"""A run whose executor is killed by a config every time is re-queued by the real stale sweep and ends
`failed` after RUNNER_MAX_REQUEUES, with the reason on its page (issue 17: the runner never leaves a run
`running` because of one config, and never restarts its workers for it forever).

Real `manage.py` processes against their own SQLite file (as tests/runner/test_resume.py): each execution is
`retest --run N --inline`, killed (SIGKILL) by the test-only kernel paddle.testonly.kill_executor; the sweep
is `retest --resume`, the command an operator runs and the one the qcluster heartbeat calls.
"""
import re
import signal
import subprocess
import sys

import pytest

from .conftest import PASSING
from .test_resume import REPO, env, manage, query, seeded_db  # noqa: F401 (env: the fixture kill_env builds on)

MAX_REQUEUES = 2


@pytest.fixture
def kill_env(env):
    environment = {**env, "RUNNER_MAX_REQUEUES": str(MAX_REQUEUES)}
    manage(environment, "shell", "-c", "from tests.runner import dbscript; dbscript.seed_kill_executor()")
    return environment


def test_a_run_that_kills_its_executor_every_time_ends_failed_after_the_limit(kill_env):
    env = kill_env
    run_id = int(re.match(r"run (\d+):", manage(env, "retest", "--task", "3", "--lane", "cpu")).group(1))
    for cycle in range(MAX_REQUEUES + 1):
        execution = subprocess.run([sys.executable, "manage.py", "retest", "--run", str(run_id), "--inline"], cwd=REPO,
                                   env=env, capture_output=True, text=True, timeout=300)
        assert execution.returncode == -signal.SIGKILL, execution.stderr[-2000:]
        assert query(env, "SELECT state FROM tracker_testrun WHERE id=?", run_id) == [("running",)]
        swept = manage(env, "retest", "--resume")
        state, requeues, message = query(env, "SELECT state, requeues, message FROM tracker_testrun WHERE id=?",
                                         run_id)[0]
        if cycle < MAX_REQUEUES:
            assert f"resumed runs: [{run_id}]" in swept
            assert (state, requeues) == ("queued", cycle + 1) and message.startswith("resumed after its executor")
    assert "resumed runs: none" in swept
    assert state == "failed" and requeues == MAX_REQUEUES
    assert f"re-queued this run {MAX_REQUEUES} times in a row" in message and "RUNNER_MAX_REQUEUES=2" in message
    # The sweep leaves a failed run alone, and its page says why it ended.
    assert "resumed runs: none" in manage(env, "retest", "--resume")
    out = manage(env, "shell", "-c", f"from tests.runner import dbscript; dbscript.page('/runs/{run_id}')")
    assert "STATUS 200" in out and f"re-queued this run {MAX_REQUEUES} times in a row" in out.split("HTML", 1)[1]
    # The config the executor finished before its first death keeps its verdict; the killer has none.
    assert query(env, "SELECT fc.config, r.status FROM tracker_configresult r JOIN tracker_failingconfig fc "
                      "ON r.failing_config_id=fc.id WHERE r.run_id=?", run_id) == [(PASSING[0], "pass")]
