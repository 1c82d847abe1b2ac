"""A release matrix run spread over real qclusters that serve different Paddle releases (issue 20, item 3), on the
ORM broker with SQLite and on PostgreSQL + Redis.

Three `manage.py qcluster` processes (RUNNER_WORKERS=1, Q_WORKERS=1 each), each with its own PADDLE_ENVS_DIR of
fake release envs (tests/releases/fake_envs.py: the main interpreter reporting another Paddle version):

* ``a`` has 3.1.0 — the only host of the matrix's 3.1.0 lane;
* ``b`` has 3.2.0, ``c`` has 3.2.0 and 3.3.0 (a release no lane asks for) — they share the 3.2.0 lane.

Every host also has the main .venv's Paddle, which the matrix does not name. One `retest --releases 3.1.0,3.2.0
--full` matrix run of small shards; ``a`` is killed (SIGKILL of its process group) while it holds a 3.1.0 lease,
which leaves that lane with no host at all until ``d`` (3.1.0) is started: the lane must be taken back (stale
sweep, decline, take-back at heartbeat rounds) and finished by ``d``. Every (config, release) verdict exists
exactly once, from the release's own build, on a host that advertises that release.

The heartbeat round runs every RUNNER_HEARTBEAT_SECONDS=3 s here (60 s by default) so that the take-back of a
release lane a host without the release declined fits the test's time, and a queued run nobody took is sent again
after RUNNER_QUEUED_RESEND_SECONDS=8 s (600 s by default).
"""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import wait_for

from ..deployment.conftest import SECRET_KEY, pg_connect, pg_url, postgres_db, redis_ns  # noqa: F401  (fixtures)
from ..releases.fake_envs import make_fake_envs
from .conftest import EXTRA_SPECS
from .test_resume import REPO

R1, R2, UNUSED = "3.1.0", "3.2.0", "3.3.0"
HOSTS = {"a": [R1], "b": [R2], "c": [R2, UNUSED], "d": [R1]}  # d starts after a is killed
CONFIGS = 3
SHARD_SIZE = 1
SEED = ("from tests.runner import dbscript; from tests.runner.conftest import make_task; "
        f"make_task(5, 'paddle.testonly.slow', [dbscript.slow_config(i, 1.5) for i in range({CONFIGS})])")


class Backend:
    """The processes' environment and this test's read access to their database."""

    def __init__(self, name: str, env: dict, root: Path, connect):
        self.name, self.env, self.root, self._connect = name, env, root, connect

    def rows(self, sql: str, *params) -> list[tuple]:
        return self._connect(sql, params)

    def value(self, sql: str, *params):
        found = self.rows(sql, *params)
        return found[0][0] if found else None


def _sqlite_backend(root: Path) -> Backend:
    db = root / "runner.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}"}

    def connect(sql, params):
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute(sql.replace("%s", "?"), params).fetchall()

    return Backend("sqlite", env, root, connect)


def _postgres_redis_backend(root: Path, db_name: str, redis) -> Backend:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "Q_CLUSTER_NAME")}
    env.update({"DATABASE_URL": pg_url(db_name), "REDIS_URL": redis.url, "Q_SITE_NAME": redis.site,
                "RUNNER_GPU_QUEUE": redis.gpu_queue, "DJANGO_SECRET_KEY": SECRET_KEY, "GITHUB_TOKEN": "",
                "GITHUB_API_URL": "http://127.0.0.1:9"})

    def connect(sql, params):
        with pg_connect(db_name) as conn:
            return conn.execute(sql, params).fetchall()

    return Backend("postgres+redis", env, root, connect)


@pytest.fixture(params=["sqlite", pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis])])
def backend(request, tmp_path):
    if request.param == "sqlite":
        found = _sqlite_backend(tmp_path)
    else:
        found = _postgres_redis_backend(tmp_path, request.getfixturevalue("postgres_db"),
                                        request.getfixturevalue("redis_ns"))
    found.env.update({
        "APITESTER_EXTRA_SPECS": EXTRA_SPECS, "RUNNER_WORKERS": "1", "Q_WORKERS": "1", "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": str(REPO), "LOG_LEVEL": "INFO", "DJANGO_SETTINGS_MODULE": "config.settings",
        "DJANGO_DEBUG": "1", "RUNNER_HEARTBEAT_SECONDS": "3", "RUNNER_QUEUED_RESEND_SECONDS": "8",
        "RUNNER_SHARD_SIZE": str(SHARD_SIZE),
        "PADDLE_ENVS_DIR": str(tmp_path / "no-envs"),  # the requester has none: it reads the heartbeats
    })
    manage(found, "migrate", "--noinput")
    manage(found, "createcachetable")  # django-q's cluster stats (the database cache on SQLite)
    manage(found, "shell", "-c", SEED)
    return found


def manage(backend: Backend, *args) -> str:
    out = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=backend.env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


class Cluster:
    """One host: a qcluster in its own process group, with its own PADDLE_ENVS_DIR of fake release envs."""

    def __init__(self, backend: Backend, name: str, releases: list[str]):
        self.name, self.releases = name, releases
        envs = make_fake_envs(backend.root / f"envs-{name}", releases)
        self.log = backend.root / f"qcluster-{name}.log"
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=REPO,
                                          env={**backend.env, "PADDLE_ENVS_DIR": str(envs)}, stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def owns(self, executor: str) -> bool:
        """True when the executor "host:pid" is a process of this cluster (alive: its group is this cluster's)."""
        try:
            return os.getpgid(int(executor.rpartition(":")[2])) == self.popen.pid
        except (ProcessLookupError, ValueError):
            return False

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)  # sentinel, django-q workers and their pool workers
        except ProcessLookupError:
            pass
        self.popen.wait(30)

    def tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} (pid {self.popen.pid}, exit {self.popen.poll()})\n{text[-2500:]}"


def diagnostics(clusters, backend: Backend) -> str:
    """What a timed-out wait shows: the runs and each cluster's log."""
    runs = backend.rows("SELECT id, release, state, message FROM tracker_testrun ORDER BY id")
    return f"runs {runs}\n" + "\n".join(c.tail() for c in clusters)


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def test_a_release_matrix_over_hosts_with_different_releases_one_killed_a_late_one_joins(backend):
    clusters = {name: Cluster(backend, name, HOSTS[name]) for name in "abc"}
    live = list(clusters.values())
    try:
        # All three advertise their releases before the matrix is requested (the requester reads them).
        wait_for(lambda: backend.value("SELECT count(*) FROM tracker_workerheartbeat") == 3, 240,
                 "three workers' heartbeats", lambda: diagnostics(live, backend))
        out = manage(backend, "retest", "--task", "5", "--lane", "cpu", "--releases", f"{R1},{R2}", "--full")
        parent = int(re.match(r"run (\d+):", out).group(1))
        lanes = dict(backend.rows("SELECT release, id FROM tracker_testrun WHERE parent_id = %s", parent))
        assert set(lanes) == {R1, R2}

        def held_by_a():
            return [(index, owner) for index, owner in backend.rows(
                "SELECT \"index\", lease_owner FROM tracker_runshard WHERE run_id = %s AND state = 'leased'",
                lanes[R1]) if clusters["a"].owns(owner)]

        # When a's pusher holds the 3.2.0 lane's only job while a works on 3.1.0, the kill loses it: b or c sends it
        # again after RUNNER_QUEUED_RESEND_SECONDS ("Lost jobs" in docs/deployment.md).
        [(killed_shard, killed_owner)] = wait_for(held_by_a, 150, "host a to hold a 3.1.0 shard",
                                                  lambda: diagnostics(live, backend))
        clusters["a"].kill()
        live.remove(clusters["a"])
        # The 3.1.0 lane now has no host; a host with 3.1.0 is added while the matrix goes on.
        clusters["d"] = Cluster(backend, "d", HOSTS["d"])
        live.append(clusters["d"])

        wait_for(lambda: backend.value("SELECT state FROM tracker_testrun WHERE id = %s", parent) == "done", 240,
                 "the matrix run to finish", lambda: diagnostics(live, backend))
        assert dict(backend.rows("SELECT release, state FROM tracker_testrun WHERE parent_id = %s", parent)) == {
            R1: "done", R2: "done"}  # no lane added, none failed
        # The parent follows its lanes only: the stale sweep never took it for an orphaned run of its own.
        assert backend.rows("SELECT state, requeues, message FROM tracker_testrun WHERE id = %s", parent) == [
            ("done", 0, "")]

        # Every (config, release) verdict exactly once, passing, from that release's build.
        results = backend.rows(
            "SELECT r.failing_config_id, t.release, r.paddle_version, r.status FROM tracker_configresult r "
            "JOIN tracker_testrun t ON r.run_id = t.id WHERE t.parent_id = %s", parent)
        configs = {row[0] for row in backend.rows(
            "SELECT fc.id FROM tracker_failingconfig fc JOIN tracker_task t ON fc.task_id = t.id WHERE t.number = 5")}
        assert len(configs) == CONFIGS
        assert sorted((config, release) for config, release, _, _ in results) == sorted(
            (config, release) for config in configs for release in (R1, R2))
        assert all(build == release and status == "pass" for _, release, build, status in results), results
        assert backend.value("SELECT done FROM tracker_testrun WHERE id = %s", parent) == 2 * CONFIGS

        # Each shard was finished by a worker that advertises the lane's release (heartbeat name
        # "<cluster>@<host>:<pid>", the executor "<host>:<pid>"), on a host whose env dir has it.
        advertised = {name.partition("@")[2]: _json(releases)
                      for name, releases in backend.rows("SELECT name, releases FROM tracker_workerheartbeat")}
        shard_rows = backend.rows("SELECT t.release, s.\"index\", s.state, s.done_by, s.attempts FROM tracker_runshard s "
                                  "JOIN tracker_testrun t ON s.run_id = t.id WHERE t.parent_id = %s", parent)
        assert len(shard_rows) == 2 * CONFIGS // SHARD_SIZE and {row[2] for row in shard_rows} == {"done"}
        for release, index, _, done_by, _ in shard_rows:
            assert release in advertised[done_by], (release, index, done_by, advertised)
            owner = next((c for c in live if c.owns(done_by)), None)
            assert owner is not None or done_by.rpartition(":")[2] == killed_owner.rpartition(":")[2], done_by
            assert owner is None or release in owner.releases, (release, done_by, owner.name)
        # The killed host's shard was leased again and finished by the late host d, the only live one with 3.1.0.
        [(_, _, _, done_by, attempts)] = [row for row in shard_rows if row[0] == R1 and row[1] == killed_shard]
        assert attempts >= 2 and done_by != killed_owner and clusters["d"].owns(done_by), (done_by, attempts)
        # The 3.2.0 lane was served only by b and c; neither ran a 3.1.0 shard.
        assert {next(c.name for c in live if c.owns(row[3])) for row in shard_rows if row[0] == R2} <= {"b", "c"}
        if backend.name == "postgres+redis":
            assert backend.value("SELECT count(*) FROM django_q_ormq") == 0  # the jobs went through Redis
    finally:
        for cluster in live:
            cluster.kill()
