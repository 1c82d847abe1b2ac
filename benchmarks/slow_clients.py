"""Hostile slow clients against scripts/serve.sh: other visitors' latency while N clients trickle headers or bodies.

Starts scripts/serve.sh (production environment, a fresh SQLite database) on a free 127.0.0.1 port with the shipped
defaults (3 workers × 4 threads on 2 cores), then for each kind (slow headers: one header byte every 2 s, never
ending; slow body: a webhook's headers then one body byte every 2 s) and each N (4, 16, 64) opens N such clients,
waits a second, and sends `--probes` plain GETs of /api/tasks one after another (a new connection each); prints
their p50 / p95 / max and how many did not answer within `--probe-timeout` s. `--script` runs another server script
the same way (e.g. the gthread serve.sh of an earlier commit, for the before/after).

    .venv/bin/python benchmarks/slow_clients.py [--counts 4 16 64] [--probes 40] [--script scripts/serve.sh]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hardening.servers import Served  # noqa: E402
from tests.hardening.slow_clients import SlowClients, p95, probe  # noqa: E402


def measure(port: int, kind: str, count: int, probes: int, interval: float, probe_timeout: float) -> dict:
    with SlowClients(port, kind, count, interval=interval) as clients:
        time.sleep(1.0)
        latencies = probe(port, probes, timeout=probe_timeout)
        reconnects = clients.reconnects
    answered = [s for s in latencies if s < probe_timeout]
    return {"kind": kind, "N": count, "p50": statistics.median(latencies), "p95": p95(latencies),
            "max": max(latencies), "failed": len(latencies) - len(answered), "reconnects": reconnects}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--kinds", nargs="+", default=["headers", "body"], choices=["headers", "body"])
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between a slow client's bytes")
    parser.add_argument("--probe-timeout", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--script", type=Path, default=ROOT / "scripts" / "serve.sh")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slow-clients-") as workdir:
        server = Served(Path(workdir), workers=args.workers, threads=args.threads, script=args.script.resolve())
        try:
            server.wait_ready()
            baseline = probe(server.port, args.probes, timeout=args.probe_timeout)
            print(f"{args.script.name}: {args.workers} workers x {args.threads} threads, load {os.getloadavg()[0]:.1f}")
            print(f"no slow client: p50 {statistics.median(baseline) * 1000:.0f} ms, p95 {p95(baseline) * 1000:.0f} ms")
            print("kind     N   p50 ms   p95 ms   max ms  failed  reconnects")
            for kind in args.kinds:
                for count in args.counts:
                    row = measure(server.port, kind, count, args.probes, args.interval, args.probe_timeout)
                    print(f"{row['kind']:<7} {row['N']:>3} {row['p50'] * 1000:>8.0f} {row['p95'] * 1000:>8.0f} "
                          f"{row['max'] * 1000:>8.0f} {row['failed']:>4}/{args.probes}  {row['reconnects']:>5}",
                          flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
