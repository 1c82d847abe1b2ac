"""Start scripts/serve.sh (gunicorn) on a free loopback port for tests and benchmarks."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from .production import PRODUCTION_ENV, PYTHON, REPO, clean_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    """scripts/serve.sh with the production environment; `stop()` ends gunicorn and its workers."""

    def __init__(self, workdir: Path, *, database_url: str | None = None, workers: int = 2, threads: int = 4,
                 extra_env: dict | None = None, script: Path = REPO / "scripts" / "serve.sh"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / f"serve-{self.port}.log", "w+")
        env = clean_env(**{**PRODUCTION_ENV, "PYTHON": PYTHON, "WEB_BIND": f"127.0.0.1:{self.port}",
                           "WEB_WORKERS": str(workers), "WEB_THREADS": str(threads), "WEB_ACCESS_LOG": "/dev/null",
                           "DJANGO_STATIC_ROOT": str(workdir / "static"),
                           "DATABASE_URL": database_url or f"sqlite:///{workdir / 'db.sqlite3'}",
                           "WEB_CREATE_DATABASE": "1",  # each test's server starts on a new database
                           **(extra_env or {})})
        self.env = env
        # Its own process group: gunicorn's workers are stopped with it.
        self.process = subprocess.Popen(["bash", str(script)], cwd=REPO, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, timeout: float = 240) -> "Served":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve.sh exited with {self.process.returncode}:\n{self.output()}")
            try:
                request = urllib.request.Request(self.url + "/api/tasks", headers={"X-Forwarded-Proto": "https"})
                with urllib.request.urlopen(request, timeout=5):
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        raise RuntimeError(f"gunicorn did not answer within {timeout} s:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-5000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()
