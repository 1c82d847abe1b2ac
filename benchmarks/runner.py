"""Throughput and overhead of apitester.pool on the CPU tasks' failing configs.

    python benchmarks/runner.py [--sample N] [--workers 1 2] [--seed-file PATH]

Reads the CPU tasks' API names from the board seed and their configs from
reports/ci_ce_cpu/error_config.txt (PADDLEAPITEST_REPORTS), re-tests them with each worker
count and prints configs/s and the overhead ratio: wall time ÷ Σ in-worker execution seconds
(wall includes starting the workers). With N workers the in-worker seconds add up N at a time,
so "wall×N ÷ Σ" is printed too: 1.0 means the workers never waited on the runner.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.pool import WorkerPool  # noqa: E402

# Task API names that differ from the config's API name (data README).
TASK_TO_CONFIG_API = {"paddle.Tensor.mul": "paddle.Tensor.__mul__", "paddle.Tensor.getitem": "paddle.Tensor.__getitem__"}


def reports_root() -> Path:
    env = os.environ.get("PADDLEAPITEST_REPORTS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[1]
    for candidate in (repo.parent / "shared" / "paddleapitest", Path("/work/shared/paddleapitest")):
        if candidate.is_dir():
            return candidate
    raise SystemExit("PaddleAPITest reports not found: set PADDLEAPITEST_REPORTS")


def default_seed() -> Path:
    repo = Path(__file__).resolve().parents[1]
    for candidate in sorted((repo.parent / "shared" / "seed").glob("*.txt")) + sorted(Path("/work/shared/seed").glob("*.txt")):
        return candidate
    raise SystemExit("board seed not found: pass --seed-file")


def cpu_tasks(seed: Path) -> list[tuple[int, str, str]]:
    """(task number, the seed's API, the reports' config API) of every CPU task of the board seed, in task order."""
    tasks = []
    for line in seed.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) >= 3 and cells[0].strip().isdigit() and cells[2].strip() == "CPU":
            api = cells[1].strip()
            tasks.append((int(cells[0]), api, TASK_TO_CONFIG_API.get(api, api)))
    return sorted(tasks)


def cpu_task_apis(seed: Path) -> set[str]:
    return {config_api for _, _, config_api in cpu_tasks(seed)}


def cpu_task_configs(seed: Path) -> list[str]:
    apis = cpu_task_apis(seed)
    path = reports_root() / "reports" / "ci_ce_cpu" / "error_config.txt"
    configs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and line.split("(", 1)[0] in apis:
            configs.append(line)
    return list(dict.fromkeys(configs))


def measure(configs: list[str], workers: int, progress_every: int = 100) -> dict:
    started = time.perf_counter()
    in_worker = 0.0
    statuses: Counter = Counter()
    with WorkerPool(workers) as pool:
        for result in pool.run(enumerate(configs)):
            in_worker += result.seconds
            statuses[result.status] += 1
            done = sum(statuses.values())
            if done % progress_every == 0:
                wall = time.perf_counter() - started
                print(f"  … {done}/{len(configs)} after {wall:.0f} s; Σ in-worker {in_worker:.0f} s; "
                      f"wall×{workers}÷Σ so far {wall * workers / max(in_worker, 1e-9):.3f}", file=sys.stderr, flush=True)
    wall = time.perf_counter() - started
    return {"workers": workers, "configs": len(configs), "wall": wall, "in_worker": in_worker,
            "rate": len(configs) / wall, "ratio": wall / in_worker if in_worker else float("nan"),
            "ratio_per_worker": wall * workers / in_worker if in_worker else float("nan"), "statuses": statuses}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, help="a random sample of N configs (seeded) instead of all")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed-file", type=Path, default=None)
    args = parser.parse_args(argv)
    configs = cpu_task_configs(args.seed_file or default_seed())
    if args.sample:
        configs = random.Random(0).sample(configs, min(args.sample, len(configs)))
    print(f"{len(configs)} CPU-task configs")
    for workers in args.workers:
        m = measure(configs, workers)
        print(f"workers={workers}: {m['configs']} configs in {m['wall']:.1f} s wall = {m['rate']:.2f} configs/s; "
              f"Σ in-worker {m['in_worker']:.1f} s; wall÷Σ = {m['ratio']:.3f}; wall×{workers}÷Σ = "
              f"{m['ratio_per_worker']:.3f}")
        print("   statuses: " + ", ".join(f"{k} {v}" for k, v in m["statuses"].most_common()))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
