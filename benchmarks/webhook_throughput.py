"""Signed webhook deliveries per second under gunicorn (scripts/serve.sh), each applied exactly once.

Starts serve.sh with the production environment on a free 127.0.0.1 port against a fresh database
(SQLite temp file in WAL mode, or a new PostgreSQL database with --backend postgres), seeds 183 tasks,
then C client processes POST N signed `【报名】` claim comments (distinct comment ids and authors; every
tenth delivered twice with the same delivery id, as GitHub redelivers) over keep-alive connections.
Prints deliveries/s and checks that every delivery answered 200 and every comment is one claim.

    .venv/bin/python benchmarks/webhook_throughput.py [--backend sqlite|postgres] [--deliveries 2000]
                                                      [--clients 16] [--workers 3] [--threads 4]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hardening import concurrency as cc  # noqa: E402
from tests.hardening.servers import Served  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--deliveries", type=int, default=2000, help="distinct claim comments")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="webhook-bench-"))
    pg_name = None
    if args.backend == "postgres":
        import psycopg

        pg_name = f"webhook_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.pg + "/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{pg_name}"')
        database_url = f"{args.pg}/{pg_name}"
    else:
        database_url = f"sqlite:///{workdir / 'db.sqlite3'}"
    github = {"GITHUB_WEBHOOK_SECRET": cc.WEBHOOK_SECRET, "GITHUB_TOKEN": "", "GITHUB_API_URL": "http://127.0.0.1:9",
              "GITHUB_TRACKING_ISSUE": "PaddlePaddle/Paddle#72667", "GITHUB_BOT_ACCOUNTS": "paddle-bot"}
    server = Served(workdir, database_url=database_url, workers=args.workers, threads=args.threads, extra_env=github)
    try:
        server.wait_ready()
        cc.shell(server.env, cc.SEED % {"tasks": cc.TASKS, "site_users": 0})
        comments = cc.claim_comments(args.deliveries)
        shares = cc.delivery_plan(comments, args.clients, redeliver_every=10)
        sent = sum(len(s) for s in shares)
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        answers = cc.collect(cc.start_clients(server.port, shares, workdir), timeout=3600)
        wall = time.perf_counter() - started
        load_after = os.getloadavg()[0]
        state = json.loads(cc.shell(server.env, cc.DUMP).strip().splitlines()[-1])
    finally:
        server.stop()
        if pg_name:
            import psycopg

            with psycopg.connect(args.pg + "/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')

    statuses: dict[str, int] = {}
    for answer in answers:
        for status, n in answer["statuses"].items():
            statuses[status] = statuses.get(status, 0) + n
    claims = {(number, login) for number, login, source, active in state["claims"] if active}
    expected = {((i % (cc.FIRST_SITE_TASK - 1)) + 1, f"login-{i}") for i in range(args.deliveries)}
    once = claims == expected and len(state["claims"]) == args.deliveries and state["deliveries"] == args.deliveries
    print(f"backend {args.backend}; gunicorn {args.workers} workers x {args.threads} threads; {args.clients} client processes")
    print(f"{sent} signed deliveries ({args.deliveries} distinct + {sent - args.deliveries} redeliveries) in {wall:.1f} s: "
          f"{sent / wall:.0f} deliveries/s; answers {statuses}")
    print(f"every comment applied exactly once: {once} ({len(state['claims'])} claims, {state['deliveries']} deliveries stored)")
    print(f"load average {load_before:.1f} before, {load_after:.1f} after (2 cores, shared with other jobs)")
    return 0 if once and set(statuses) == {"200"} else 1


if __name__ == "__main__":
    raise SystemExit(main())
