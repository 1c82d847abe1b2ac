"""Time until every CPU task has a first verdict, from a fresh start (what scripts/run.sh does).

On a new temp SQLite database: migrate, bootstrap_board (fixture + the PaddleAPITest reports), `retest
--first-start` (queues the run of every CPU task), then `manage.py qcluster` — the same steps as
scripts/run.sh, timed from the first one. Polls the database every second for the tasks in the run's
scope with at least one verdict and prints when 25 / 50 / 75 / 100 % of them had one, the slowest
tasks' first-verdict times, and the configs judged by then. With --until-done it waits for the whole run
and prints its wall time.

    .venv/bin/python benchmarks/first_verdicts.py [--reports DIR] [--max-seconds 900] [--until-done]

The reports directory defaults to apitester.reports.reports_dir() ($PADDLEAPITEST_REPORTS; never copied).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PY = str(ROOT / ".venv" / "bin" / "python")

from apitester.reports import reports_dir  # noqa: E402  (the repository on the path first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", default=str(reports_dir()))
    parser.add_argument("--max-seconds", type=float, default=900.0)
    parser.add_argument("--until-done", action="store_true")
    args = parser.parse_args()
    if not Path(args.reports).is_dir():
        print(f"no PaddleAPITest reports at {args.reports}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="first-verdicts-") as tmp:
        db = Path(tmp) / "db.sqlite3"
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "DJANGO_DEBUG": "1",
               "PADDLEAPITEST_REPORTS": args.reports, "PYTHONUNBUFFERED": "1"}
        started = time.monotonic()
        steps = {}
        for step in (["migrate", "--noinput"], ["bootstrap_board"], ["retest", "--first-start"]):
            subprocess.run([PY, "manage.py", *step], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
            steps[step[0]] = time.monotonic() - started
        cluster = subprocess.Popen([PY, "manage.py", "qcluster"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            return _watch(db, started, steps, args)
        finally:
            os.killpg(cluster.pid, signal.SIGTERM)
            try:
                cluster.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(cluster.pid, signal.SIGKILL)


def _watch(db: Path, started: float, steps: dict, args) -> int:
    con = sqlite3.connect(db, timeout=30)
    run_id, scope_total, scope = con.execute("SELECT id, total, scope FROM tracker_testrun ORDER BY id LIMIT 1").fetchone()
    numbers = json.loads(scope).get("tasks", [])
    # the tasks of the run's scope that have a config to judge
    tasks = con.execute(
        f"SELECT COUNT(DISTINCT t.id) FROM tracker_task t JOIN tracker_failingconfig f ON f.task_id = t.id "
        f"WHERE t.number IN ({','.join('?' * len(numbers))})", numbers).fetchone()[0]
    first: dict[int, float] = {}
    done_at_all = None
    while time.monotonic() - started < args.max_seconds:
        now = time.monotonic() - started
        for (task_id,) in con.execute("SELECT DISTINCT task_id FROM tracker_configresult WHERE run_id = ?", (run_id,)):
            first.setdefault(task_id, now)
        state, done, total = con.execute("SELECT state, done, total FROM tracker_testrun WHERE id = ?",
                                         (run_id,)).fetchone()
        if len(first) >= tasks and done_at_all is None:
            done_at_all = now
            judged_then = done
            if not args.until_done:
                break
        if state not in ("queued", "running"):
            break
        time.sleep(1.0)
    elapsed = time.monotonic() - started
    print(f"setup (from start): migrate {steps['migrate']:.0f} s, bootstrap_board {steps['bootstrap_board']:.0f} s, "
          f"run queued {steps['retest']:.0f} s; run {run_id}: {total or scope_total} configs of {tasks} CPU tasks")
    times = sorted(first.values())
    if times:
        print(f"  the first verdict of all arrived after {times[0]:.0f} s (qcluster start, worker spawn, imports)")
    for share in (0.25, 0.5, 0.75, 1.0):
        need = max(1, round(share * tasks))
        at = f"{times[need - 1]:.0f} s" if len(times) >= need else f"not within {elapsed:.0f} s"
        print(f"  {share:4.0%} of tasks ({need}) had a first verdict after {at}")
    if done_at_all is not None:
        print(f"every CPU task had a verdict {done_at_all:.0f} s after start ({judged_then} configs judged by then)")
    else:
        print(f"{len(first)} of {tasks} tasks had a verdict after {elapsed:.0f} s (--max-seconds)")
    names = dict(con.execute("SELECT id, api FROM tracker_task"))
    slowest = sorted(first.items(), key=lambda item: -item[1])[:5]
    print("  slowest first verdicts: " + ", ".join(f"{names[t]} {s:.0f} s" for t, s in slowest))
    if args.until_done:
        state, done = con.execute("SELECT state, done FROM tracker_testrun WHERE id = ?", (run_id,)).fetchone()
        print(f"run {state}: {done} configs after {elapsed:.0f} s")
    return 0 if done_at_all is not None else 1


if __name__ == "__main__":
    sys.exit(main())
