"""One config per CPU task on every Paddle release installed: where each task's fix landed, per release.

    python benchmarks/releases.py [--releases 3.0.0,3.3.1] [--workers 1] [--seed-file PATH] [--json OUT]

For every CPU task of the board seed it takes the task's first config in reports/ci_ce_cpu/error_config.txt
(PADDLEAPITEST_REPORTS) — a sample, not every config — and runs the same list on the main .venv's Paddle
and on each env of `manage.py paddle_envs` (workers started with that env's interpreter). Prints per release:
env creation time (as measured by `paddle_envs add`) and disk, configs/s, the worker overhead ratio of
benchmarks/runner.py (wall ÷ Σ in-worker seconds, wall includes starting the workers), the status counts,
then "CPU tasks fixed per release" from tracker.selectors.releases.fixed_in over the per-task grids.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from apitester.pool import WorkerPool  # noqa: E402
from runner import cpu_tasks, default_seed, reports_root  # noqa: E402
from tracker.selectors.releases import describe, fixed_in  # noqa: E402
from tracker.vocab import FixedInKind  # noqa: E402
from tracker.services import paddle_envs  # noqa: E402


def one_config_per_cpu_task(seed: Path) -> list[tuple[str, str]]:
    """[(task label, config)] — the first report config of each CPU task's API."""
    tasks = [(f"No.{number} {api}", config_api) for number, api, config_api in cpu_tasks(seed)]
    first: dict[str, str] = {}
    for line in (reports_root() / "reports" / "ci_ce_cpu" / "error_config.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line:
            first.setdefault(line.split("(", 1)[0], line)
    return [(label, first[api]) for label, api in tasks if api in first]


def measure(python: str, configs: list[tuple[str, str]], workers: int) -> dict:
    started = time.perf_counter()
    in_worker, statuses, verdicts, build = 0.0, Counter(), {}, {}
    with WorkerPool(workers, python=python) as pool:
        for result in pool.run(configs):
            in_worker += result.seconds
            statuses[result.status] += 1
            verdicts[result.key] = result.status
            build = build or result.build
    wall = time.perf_counter() - started
    return {"wall": wall, "in_worker": in_worker, "rate": len(configs) / wall,
            "ratio": wall / in_worker if in_worker else float("nan"),
            "ratio_per_worker": wall * workers / in_worker if in_worker else float("nan"),
            "statuses": dict(statuses), "verdicts": verdicts, "build": build}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--releases", help="comma-separated (default: every release installed)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed-file", type=Path, default=None)
    parser.add_argument("--json", type=Path, help="write the per-task verdicts and figures here")
    args = parser.parse_args(argv)
    envs = {env.version: env for env in paddle_envs.installed()}
    envs.setdefault(paddle_envs.main_version(), paddle_envs.main_env())
    wanted = args.releases.split(",") if args.releases else sorted(envs, key=paddle_envs.version_key)
    missing = [r for r in wanted if r not in envs]
    if missing:
        raise SystemExit(paddle_envs.unknown_release_message(missing[0]))
    configs = one_config_per_cpu_task(args.seed_file or default_seed())
    print(f"{len(configs)} CPU tasks, one config each; releases {', '.join(wanted)}; {args.workers} worker(s)")
    out = {"tasks": [label for label, _ in configs], "releases": {}}
    for release in wanted:
        env = envs[release]
        disk = env.disk_bytes()
        m = measure(env.python, configs, args.workers)
        out["releases"][release] = {**m, "build_seconds": env.build_seconds, "disk_bytes": disk, "main": env.main}
        print(f"Paddle {release} ({m['build'].get('paddle_version')} {m['build'].get('paddle_commit', '')[:10]}): "
              f"{'main .venv' if env.main else f'env built in {env.build_seconds:.0f} s, {disk / 2**30:.2f} GiB'}; "
              f"{len(configs)} configs in {m['wall']:.1f} s = {m['rate']:.2f} configs/s; Σ in-worker {m['in_worker']:.1f} s; "
              f"wall÷Σ = {m['ratio']:.3f}; statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(m["statuses"].items())),
              flush=True)
    fixed = Counter()
    answers = {}
    for label, _config in configs:
        grid = {label: {r: out["releases"][r]["verdicts"][label] for r in wanted}}
        answer = fixed_in(grid)
        answers[label] = describe(answer)
        fixed[answer.kind if answer.kind != FixedInKind.FIXED else f"fixed in {answer.release}"] += 1
    out["answers"] = answers
    print("\nCPU tasks (one config each) by answer:")
    for kind, n in sorted(fixed.items()):
        print(f"  {kind}: {n}")
    print()
    print(markdown_table(out, wanted))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


def markdown_table(out: dict, releases: list[str]) -> str:
    """docs/measurements.md's "CPU tasks by answer" table from a finished measurement."""
    tasks = out["tasks"]
    fixed_here = Counter()
    for label in tasks:
        answer = fixed_in({label: {r: out["releases"][r]["verdicts"][label] for r in releases}})
        if answer.kind == FixedInKind.FIXED:
            fixed_here[answer.release] += 1
    rows = ["| Paddle release (commit) | sample configs passing | CPU tasks fixed in this release | env build | disk | "
            "configs/s | wall ÷ Σ in-worker |", "|---|---|---|---|---|---|---|"]
    for r in releases:
        m = out["releases"][r]
        passing = sum(1 for label in tasks if m["verdicts"][label] == "pass")
        build = "main .venv" if m["main"] else f"{m['build_seconds']:.0f} s"
        disk = "—" if m["main"] else f"{m['disk_bytes'] / 2**30:.2f} GiB"
        rows.append(f"| {r} ({m['build'].get('paddle_commit', '')[:10]}) | {passing} / {len(tasks)} | "
                    f"{fixed_here.get(r, 0)} | {build} | {disk} | {m['rate']:.2f} | {m['ratio']:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
