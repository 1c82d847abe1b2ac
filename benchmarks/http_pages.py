"""Board and task page latency under gunicorn (scripts/serve.sh) with concurrent clients on loopback.

Builds a temp SQLite database with the 183 board tasks (the committed fixture) and 50,000 ConfigResults
over 20 runs (tracker.services.synthetic), starts scripts/serve.sh with the production environment on a
free 127.0.0.1 port, and lets C concurrent keep-alive clients request each page N times in all. Two
modes per page: `full` (every request a plain GET: the server renders, from its per-data-version cache
after the first) and `conditional` (a browser revalidating: If-None-Match with the ETag → 304).
Prints p50/p95/max latency and requests/s, and the load average (the machine is shared).

    .venv/bin/python benchmarks/http_pages.py [--clients 16] [--requests 800] [--workers 3] [--threads 4]
"""
from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_database(db_path: Path, results: int, runs: int) -> dict:
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_DEBUG"] = "1"  # this process only builds the database
    import django

    django.setup()
    from django.core.management import call_command

    from tracker.models import ConfigResult, Task
    from tracker.services.synthetic import generate_results

    call_command("migrate", verbosity=0)
    call_command("loaddata", str(ROOT / "fixtures" / "board.json"), verbosity=0)
    generate_results(runs=runs, results=results, seed=0)
    busiest = (ConfigResult.objects.values("task__number").annotate(n=django.db.models.Count("pk"))
               .order_by("-n").values_list("task__number", flat=True).first())
    return {"tasks": Task.objects.count(), "results": ConfigResult.objects.count(), "busiest": busiest}


def _client_process(port: int, path: str, threads: int, per_client: int, conditional: bool) -> tuple[list, dict]:
    """One client process: `threads` keep-alive clients, each making `per_client` requests."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"X-Forwarded-Proto": "https", "Accept-Encoding": "gzip"}
        etag = None
        mine = []
        for _ in range(per_client):
            sent = dict(headers, **({"If-None-Match": etag} if conditional and etag else {}))
            started = time.perf_counter()
            connection.request("GET", path, headers=sent)
            response = connection.getresponse()
            response.read()
            mine.append((time.perf_counter() - started) * 1000)
            etag = response.getheader("ETag") or etag
            with lock:
                statuses[response.status] = statuses.get(response.status, 0) + 1
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=client) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return latencies, statuses


def hammer(port: int, path: str, clients: int, total: int, conditional: bool, processes: int = 4) -> dict:
    """`clients` concurrent clients spread over `processes` client processes (one Python process would
    serialise the clients on its own interpreter lock and measure itself)."""
    processes = min(processes, clients)
    per_client = max(1, total // clients)
    started = time.perf_counter()
    with multiprocessing.Pool(processes) as pool:
        parts = pool.starmap(_client_process, [(port, path, clients // processes, per_client, conditional)
                                               for _ in range(processes)])
    wall = time.perf_counter() - started
    latencies = sorted(x for part, _ in parts for x in part)
    statuses: dict[int, int] = {}
    for _, part in parts:
        for status, n in part.items():
            statuses[status] = statuses.get(status, 0) + n
    return {"p50": statistics.median(latencies), "p95": latencies[int(len(latencies) * 0.95) - 1],
            "max": latencies[-1], "rps": len(latencies) / wall, "statuses": statuses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=800, help="requests per page and mode, all clients together")
    parser.add_argument("--results", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="http-pages-"))
    db_path = workdir / "db.sqlite3"
    started = time.perf_counter()
    info = build_database(db_path, args.results, args.runs)
    print(f"database: {info['tasks']} tasks, {info['results']} ConfigResults over {args.runs} runs "
          f"(built in {time.perf_counter() - started:.0f} s); busiest task No.{info['busiest']}")

    from tests.hardening.servers import Served

    server = Served(workdir, database_url=f"sqlite:///{db_path}", workers=args.workers, threads=args.threads)
    try:
        server.wait_ready()
        pages = ["/", f"/tasks/{info['busiest']}", "/api/tasks"]
        print(f"gunicorn: {args.workers} workers x {args.threads} threads; {args.clients} clients; "
              f"load average before: {os.getloadavg()[0]:.1f}")
        print(f"{'page':22s} {'mode':12s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} {'req/s':>7s}  statuses")
        for path in pages:
            for conditional in (False, True):
                hammer(server.port, path, args.clients, args.clients * 2, conditional)  # warm each worker
                figures = hammer(server.port, path, args.clients, args.requests, conditional)
                mode = "conditional" if conditional else "full"
                print(f"{path:22s} {mode:12s} {figures['p50']:8.1f} {figures['p95']:8.1f} {figures['max']:8.1f} "
                      f"{figures['rps']:7.1f}  {figures['statuses']}")
        print(f"load average after: {os.getloadavg()[0]:.1f} (2 cores, shared with other jobs)")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
