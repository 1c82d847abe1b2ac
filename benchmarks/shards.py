"""One run spread over qclusters: wall time of the same configs on 1 qcluster × 1 worker vs 2 × 1.

On a new temp SQLite database (ORM broker): migrate, then one task per API holding a deterministic sample of
real report lines (reports/ci_ce_cpu/error_config.txt, configs of 1e3–2e5 input elements whose API has a spec;
real paddle and torch). For each cluster count K it starts K `manage.py qcluster` processes (RUNNER_WORKERS=1,
Q_WORKERS=1), waits until every one has advertised its lane (its paddle/torch probe done), then queues one run
of all the sample's tasks (`retest --tasks`) and times it from queueing until the run is `done` — the joining
clusters' worker start-up included, as on real hosts. Prints each wall time, the configs each cluster's
executors finished, and the speed-up wall(1) ÷ wall(2).

    .venv/bin/python benchmarks/shards.py [--sample 160] [--shard-size 10] [--clusters 1 2] [--threads-per-worker N]
"""
from __future__ import annotations

import argparse
import json
import os
import re
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

from apitester.config import parse_config  # noqa: E402  (the repository on the path first)
from apitester.pool import config_elements  # noqa: E402
from apitester.reports import reports_dir  # noqa: E402
from apitester.specs import get_spec  # noqa: E402


def sample_configs(reports: Path, count: int) -> list[str]:
    """Every n-th runnable line of the CPU report, so the sample spans its APIs and sizes."""
    lines = [line.strip() for line in (reports / "reports" / "ci_ce_cpu" / "error_config.txt").read_text().splitlines()]
    fit = [line for line in lines if line and 1_000 < config_elements(line) < 200_000 and get_spec(parse_config(line).api)]
    step = max(1, len(fit) // count)
    return fit[::step][:count]


def seed(env: dict, tmp: Path, configs: list[str]) -> list[int]:
    """One CPU task per API (numbers from 9001) with its configs, through the tests' task factory."""
    by_api: dict[str, list[str]] = {}
    for config in configs:
        by_api.setdefault(parse_config(config).api, []).append(config)
    plan = tmp / "tasks.json"
    plan.write_text(json.dumps(sorted(by_api.items())))
    code = ("import json; from tests.factories import make_task; "
            f"[make_task(9001 + i, api, lines) for i, (api, lines) in enumerate(json.load(open({str(plan)!r})))]")
    subprocess.run([PY, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, check=True)
    return [9001 + i for i in range(len(by_api))]


def timed_run(db: Path, env: dict, tasks: list[int], clusters: int) -> dict:
    con = sqlite3.connect(db, timeout=30)
    con.execute("DELETE FROM tracker_workerheartbeat")
    con.commit()
    procs = [subprocess.Popen([PY, "manage.py", "qcluster"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True) for _ in range(clusters)]
    try:
        while con.execute("SELECT count(*) FROM tracker_workerheartbeat").fetchone()[0] < clusters:
            time.sleep(0.5)
        started = time.monotonic()
        out = subprocess.run([PY, "manage.py", "retest", "--task", *map(str, tasks), "--lane", "cpu"], cwd=ROOT,
                             env=env, check=True, capture_output=True, text=True).stdout
        run_id = int(re.match(r"run (\d+):", out).group(1))
        while con.execute("SELECT state FROM tracker_testrun WHERE id = ?", (run_id,)).fetchone()[0] != "done":
            time.sleep(0.5)
        wall = time.monotonic() - started
        per_executor = con.execute("SELECT done_by, count(*), sum(json_array_length(config_ids)) FROM tracker_runshard "
                                   "WHERE run_id = ? GROUP BY done_by", (run_id,)).fetchall()
        total, inside = con.execute("SELECT count(*), sum(seconds) FROM tracker_configresult WHERE run_id = ?",
                                    (run_id,)).fetchone()
        return {"run": run_id, "wall": wall, "configs": total, "in_worker": inside, "executors": per_executor}
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        con.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", default=str(reports_dir()))
    parser.add_argument("--sample", type=int, default=160)
    parser.add_argument("--shard-size", type=int, default=10)
    parser.add_argument("--clusters", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads-per-worker", type=int, default=0,
                        help="RUNNER_THREADS_PER_WORKER of every qcluster (0: cores ÷ RUNNER_WORKERS, i.e. all cores "
                             "for each cluster's one worker -- two clusters on one machine then oversubscribe it)")
    args = parser.parse_args()
    configs = sample_configs(Path(args.reports), args.sample)
    with tempfile.TemporaryDirectory(prefix="shards-bench-") as tmp:
        db = Path(tmp) / "db.sqlite3"
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "DJANGO_DEBUG": "1", "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": str(ROOT), "RUNNER_WORKERS": "1", "Q_WORKERS": "1", "LOG_LEVEL": "WARNING",
               "RUNNER_SHARD_SIZE": str(args.shard_size), "RUNNER_THREADS_PER_WORKER": str(args.threads_per_worker)}
        env.pop("REDIS_URL", None)
        subprocess.run([PY, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        tasks = seed(env, Path(tmp), configs)
        print(f"{len(configs)} configs of {len(tasks)} APIs, shards of {args.shard_size}, {os.cpu_count()} cores, "
              f"{args.threads_per_worker or 'cores ÷ workers'} thread(s) per worker, "
              f"load average {os.getloadavg()[0]:.1f}")
        walls = {}
        for clusters in args.clusters:
            result = timed_run(db, env, tasks, clusters)
            walls[clusters] = result["wall"]
            print(f"{clusters} qcluster(s) x 1 worker: run {result['run']}, {result['configs']} configs in "
                  f"{result['wall']:.1f} s (sum in-worker {result['in_worker']:.1f} s); shards/configs per executor: "
                  + ", ".join(f"{owner.rpartition(':')[2]}: {n}/{c}" for owner, n, c in result["executors"]))
        if 1 in walls and 2 in walls:
            print(f"speed-up 2 x 1 vs 1 x 1: {walls[1] / walls[2]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
