"""A shared deployment on the machine's real servers: a fresh PostgreSQL database, a private Redis
namespace, and real `manage.py` processes (migrate, bootstrap_board, qcluster, runserver, retest).

Only the processes these fixtures start see DATABASE_URL / REDIS_URL; the pytest process keeps the
default SQLite settings. An unreachable server FAILS the tests (CI starts both with
scripts/ensure_services.sh): a deployment test that skips would prove nothing.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.waiting import wait_for as wait_until  # noqa: F401  (the deployment tests' name for it)

REPO = Path(__file__).resolve().parents[2]
MANAGE = REPO / "manage.py"

PG_HOST = os.environ.get("TEST_POSTGRES_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("TEST_POSTGRES_PORT", "5432"))
PG_USER = os.environ.get("TEST_POSTGRES_USER", "postgres")
PG_ADMIN_DB = os.environ.get("TEST_POSTGRES_DB", "test")  # an existing database to issue CREATE DATABASE from
REDIS_HOST = os.environ.get("TEST_REDIS_HOST", "127.0.0.1")
REDIS_PORT = int(os.environ.get("TEST_REDIS_PORT", "6379"))
REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "14"))  # a db number nothing else on the machine uses

SECRET_KEY = "deployment-test-secret-key"
WEBHOOK_SECRET = "deployment-webhook-secret"

# Real lines of reports/ci_ce_cpu/error_config.txt (quoted singly) and the verdicts the installed
# Paddle 3.3.1 CPU build gives them (tests/engine/test_real_configs.py checks the same in-process):
# one paddle.clip failure was fixed since the report, the float16 multiply still overflows.
CPU_CONFIGS = {
    'paddle.clip(Tensor([5],"float64"), min=0, )': ("pass", ""),
    # The forward agrees; Paddle gives a Tensor `min` no gradient where plain torch.clamp does, so the stored
    # (strict) verdict fails in backward (tests/engine/test_real_configs.py says the same in-process).
    'paddle.clip(x=Tensor([3, 3],"float64"), min=Tensor([1],"float64"), max=None, )': ("accuracy_error", "backward"),
    'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )': ("accuracy_error", "forward"),
}
# A line of reports/ci_ce_gpu/test_history/20250606/error/error_config.txt.
GPU_CONFIG = 'paddle.clip(Tensor([5],"float64"), min=0, )'
CLIP_CPU_TASK, MUL_CPU_TASK, CLIP_GPU_TASK = 11, 141, 163  # paddle.clip CPU, paddle.Tensor.mul CPU, paddle.clip GPU


def _fail_unreachable(what: str, error: Exception) -> None:
    pytest.fail(f"{what} is not reachable ({error}). The shared-deployment tests need it; start it with "
                f"`bash scripts/ensure_services.sh` (CI does this in scripts/test.sh).", pytrace=False)


def pg_connect(dbname: str, **kwargs):
    import psycopg

    return psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname, connect_timeout=5, **kwargs)


def pg_url(dbname: str) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"


@pytest.fixture(scope="module")
def postgres_db():
    """A uniquely named, freshly created PostgreSQL database, dropped afterwards."""
    name = f"deploy_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = unreachable = None
    try:
        admin = pg_connect(PG_ADMIN_DB, autocommit=True)
    except Exception as error:  # psycopg.OperationalError and friends
        unreachable = error
    if unreachable:  # failed outside the except block: the message, not a chained traceback
        _fail_unreachable(f"PostgreSQL at {PG_HOST}:{PG_PORT} (user {PG_USER}, db {PG_ADMIN_DB})", unreachable)
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with pg_connect(PG_ADMIN_DB, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pg_rows(dbname: str, sql: str, params=()) -> list[tuple]:
    with pg_connect(dbname) as conn:
        return conn.execute(sql, params).fetchall()


def pg_value(dbname: str, sql: str, params=()):
    rows = pg_rows(dbname, sql, params)
    return rows[0][0] if rows else None


class RedisNamespace:
    """django-q keys of one test session: its own site name (queue prefix) and GPU queue name."""

    def __init__(self, client, site: str, gpu_queue: str):
        self.client, self.site, self.gpu_queue = client, site, gpu_queue
        self.url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}"

    def queue_key(self, queue: str) -> str:
        return f"django_q:{queue}:q"  # django_q.brokers.redis_broker.Redis list key

    @property
    def cpu_queue_key(self) -> str:
        return self.queue_key(self.site)

    @property
    def gpu_queue_key(self) -> str:
        return self.queue_key(self.gpu_queue)

    def keys(self) -> list[str]:
        found = []
        for prefix in (self.site, self.gpu_queue):
            found += [k.decode() for k in self.client.scan_iter(match=f"django_q:{prefix}:*")]
        return sorted(found)

    def queued_tasks(self, key: str) -> list[dict]:
        """The queued django-q packages of a list, decoded with the site's signing key and salt."""
        from django_q import core_signing
        from django_q.signing import PickleSerializer

        return [core_signing.loads(raw.decode(), key=SECRET_KEY, salt=self.site, serializer=PickleSerializer)
                for raw in self.client.lrange(key, 0, -1)]

    def clear(self) -> None:
        for key in self.keys():
            self.client.delete(key)


@pytest.fixture(scope="module")
def redis_ns():
    """A dedicated Redis db, and a per-session key prefix in it so parallel sessions never collide;
    the prefix's keys are deleted before and after (FLUSHDB would also wipe a concurrent session)."""
    import redis

    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=REDIS_DB, socket_timeout=5, socket_connect_timeout=5)
    unreachable = None
    try:
        client.ping()
    except Exception as error:
        unreachable = error
    if unreachable:
        _fail_unreachable(f"Redis at {REDIS_HOST}:{REDIS_PORT}", unreachable)
    tag = f"{os.getpid()}{uuid.uuid4().hex[:6]}"
    ns = RedisNamespace(client, site=f"deploytest{tag}", gpu_queue=f"deploytestgpu{tag}")
    ns.clear()
    try:
        yield ns
    finally:
        ns.clear()
        client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no output)"
    return "\n".join(text.splitlines()[-lines:])


class Proc:
    """A manage.py process in its own process group, its output in a log file."""

    def __init__(self, name: str, args: list[str], env: dict, log_dir: Path):
        self.name = name
        self.log = log_dir / f"{name}.log"
        self._fh = open(self.log, "wb")
        self.popen = subprocess.Popen([sys.executable, str(MANAGE), *args], cwd=REPO, env=env,
                                      stdout=self._fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)

    @property
    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def describe(self) -> str:
        return f"{self.name} (pid {self.popen.pid}, exit {self.popen.poll()}) output:\n{tail(self.log)}"

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.name} did not finish within {timeout:.0f} s; {self.describe()}", pytrace=False)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM to the process group (django-q stops its workers), SIGKILL if it lingers."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)  # leftovers of the group (pool workers), if any
        except ProcessLookupError:
            pass
        if self.popen.poll() is None:
            self.popen.wait(10)
        self._fh.close()


@pytest.fixture(scope="module")
def procs():
    """Starts manage.py processes and stops every one of them at the end, whatever happened."""
    started: list[Proc] = []

    def start(name, args, env, log_dir) -> Proc:
        proc = Proc(name, args, env, log_dir)
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):
        proc.stop()


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 30):
    """(status, body bytes) of a real HTTP request; HTTP errors are answers, not exceptions."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
