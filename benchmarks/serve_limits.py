"""scripts/serve.sh alone against three attacks of issue #45: header tricklers by the thousand, incomplete bodies
by the hundred, and more connections than the server's descriptor limit.

Starts scripts/serve.sh (production environment, a fresh SQLite database, `--workers` × `--threads`) on a free
127.0.0.1 port, its file-descriptor limit set by `ulimit -n --nofile` in a wrapper, then runs one attack:

- `tricklers`: `--count` clients each send a request line and then one header byte every `--interval` s, never
  ending their headers (a client the server closes comes back at once); meanwhile a probe GETs /api/tasks every
  0.5 s for `--seconds` s from 127.0.0.2 (a new connection each). Prints the probes' p50 / p95 / max, how many did
  not answer within 10 s, the tricklers' reconnects, and the server log's lines per minute over the attack.
- `bodies`: `--count` connections each send a webhook's headers (Content-Length 2,621,440: 2.6 MB, the largest
  body serve.sh accepts) and all of the body but its last byte, then hold. Prints the total resident memory (RSS)
  of the gunicorn workers before, once every body is sent, and 10 s after the clients closed, and what the server
  answered.

`--script` runs another serve.sh the same way (e.g. one of an earlier commit, for the before/after).

    .venv/bin/python benchmarks/serve_limits.py tricklers --count 1000 --nofile 1024 [--seconds 60]
    .venv/bin/python benchmarks/serve_limits.py bodies --count 200
"""
from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hardening.servers import Served  # noqa: E402
from tests.hardening.slow_clients import HTTPS, SlowClients, p95  # noqa: E402

BODY_BYTES = 2_621_440


def workers_rss_mib(master_pid: int) -> float:
    """The summed VmRSS of the gunicorn master's children (its workers), in MiB."""
    total_kib = 0
    for task in Path(f"/proc/{master_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
    return total_kib / 1024


def timed_probes(port: int, seconds: float, source: str = "127.0.0.2", timeout: float = 10.0) -> list[float]:
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
        try:
            connection.request("GET", "/api/tasks", headers=HTTPS)
            response = connection.getresponse()
            response.read()
            latencies.append(time.monotonic() - started if response.status == 200 else timeout)
        except OSError:
            latencies.append(timeout)
        finally:
            connection.close()
        time.sleep(max(0.0, 0.5 - (time.monotonic() - started)))
    return latencies


class Tricklers(SlowClients):
    """SlowClients whose opening connections may fail (a server at its descriptor limit leaves them in the listen
    backlog): a failed one is retried at the next trickle, as a reconnect."""

    def _open(self) -> socket.socket:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            sock.sendall(b"GET /api/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\nX-Slow: ")
            return sock
        except OSError:
            self.refused += 1
            unconnected = socket.socket()
            unconnected.close()  # sendall on it fails: the trickle loop opens it again
            return unconnected

    refused = 0

    def __enter__(self) -> "Tricklers":
        with ThreadPoolExecutor(64) as pool:  # a connection the server does not accept costs its 1 s timeout
            self._sockets = list(pool.map(lambda _: self._open(), range(self.count)))
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()
        return self


def log_lines(server: Served) -> int:
    server.log.flush()
    with open(server.log.name, "rb") as log:
        return sum(1 for _ in log)


def tricklers(server: Served, args) -> None:
    before = log_lines(server)
    started = time.monotonic()
    with Tricklers(server.port, "headers", args.count, interval=args.interval) as clients:
        latencies = timed_probes(server.port, args.seconds)
        reconnects, refused = clients.reconnects, clients.refused
    minutes = (time.monotonic() - started) / 60
    lines = log_lines(server) - before
    failed = sum(1 for latency in latencies if latency >= 10.0)
    print(f"{args.count} header tricklers, {len(latencies)} probes: p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"p95 {p95(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms, {failed} failed; "
          f"{reconnects} reconnects, {refused} connections not accepted within 1 s; server log {lines} lines in {minutes:.2f} min ({lines / minutes:,.0f} a minute)")
    tail = server.output().splitlines()[-3:]
    print("log tail:", *tail, sep="\n  ")


def send_almost_whole_body(port: int) -> tuple[socket.socket | None, str]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = (f"POST /github/webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
            f"Content-Type: application/json\r\nX-GitHub-Event: ping\r\nContent-Length: {BODY_BYTES}\r\n\r\n")
    try:
        sock.sendall(head.encode() + b"{" + b" " * (BODY_BYTES - 2))  # all but the last byte
    except OSError as error:
        return sock, f"send failed: {error.__class__.__name__}"
    sock.settimeout(0.5)
    try:
        answer = sock.recv(64)
        return sock, answer.split(b"\r\n")[0].decode() or "closed"
    except TimeoutError:
        return sock, "held"


def bodies(server: Served, args) -> None:
    master = server.process.pid
    idle = workers_rss_mib(master)
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: send_almost_whole_body(server.port), range(args.count)))
    sent_seconds = time.monotonic() - started
    time.sleep(1.0)
    loaded = workers_rss_mib(master)
    outcomes: dict[str, int] = {}
    for _, outcome in results:
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    for sock, _ in results:
        if sock is not None:
            sock.close()
    time.sleep(10.0)
    after = workers_rss_mib(master)
    print(f"{args.count} bodies of {BODY_BYTES:,} bytes less one, sent in {sent_seconds:.1f} s: workers' RSS "
          f"{idle:.0f} MiB idle, {loaded:.0f} MiB with the bodies pending (+{loaded - idle:.0f}), "
          f"{after:.0f} MiB 10 s after they closed (+{after - idle:.0f}); answers: {outcomes}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("attack", choices=["tricklers", "bodies"])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between a trickler's header bytes")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the probe runs beside the tricklers")
    parser.add_argument("--nofile", type=int, default=1024, help="serve.sh's descriptor limit (ulimit -n)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "serve.sh")
    parser.add_argument("--env", nargs="*", default=[], help="NAME=VALUE for serve.sh's environment")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-limits-") as workdir:
        wrapper = Path(workdir) / "limited-serve.sh"
        wrapper.write_text(f'ulimit -n {args.nofile}\nexec bash "{args.script.resolve()}"\n')
        extra = dict(item.split("=", 1) for item in args.env)
        server = Served(Path(workdir), workers=args.workers, threads=args.threads, script=wrapper, extra_env=extra)
        try:
            server.wait_ready()
            print(f"{args.script}: {args.workers} workers x {args.threads} threads, ulimit -n {args.nofile}, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            (tricklers if args.attack == "tricklers" else bodies)(server, args)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
