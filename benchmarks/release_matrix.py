"""The release matrix through the product's own path: a bisecting matrix run of the CPU tasks' configs on
every Paddle release installed, then the per-task "fixed in" answers the board shows.

    .venv/bin/python benchmarks/release_matrix.py [--origin reports/ci_ce_cpu/error_config.txt]
        [--per-task N] [--seed 0] [--max-input-bytes B] [--min-input-bytes B] [--workers 2] [--full]
        [--releases all|X,Y] [--warm-pools 8] [--json OUT] [--keep-db PATH]

On a new temp SQLite database (the main one is never touched): migrate, bootstrap_board (the fixture and
the PaddleAPITest reports at $PADDLEAPITEST_REPORTS, never copied), keep the CPU tasks' configs that the
report file ``--origin`` lists (every one, or with --per-task N a seeded sample of at most N per task,
stated in the output; with --max-input-bytes only configs whose inputs take at most B bytes), then what `retest --releases all --inline` does: tracker.services.runs
.create_matrix_run (bisect mode unless --full: the oldest and newest release first, the releases between
only for configs whose verdicts there differ) and execute_run on each lane until no lane is queued. The
envs are those of `manage.py paddle_envs` ($PADDLE_ENVS_DIR, default var/paddle-envs) plus the main .venv.

Prints: wall time; runs executed vs a full scan (configs × releases); Σ in-worker seconds and Σ seconds
inside Paddle's and Torch's own calls (ConfigResult.framework_seconds: the API on both sides and the
autograd calls, every draw), with wall ÷ Σ framework per worker (wall × workers ÷ Σ) — the engine's own
overhead including worker start, input generation and comparison; Σ seconds per phase (apitester.engine.phases) and what
the Torch result cache did (a matrix's lanes reuse Torch's results across releases; ``TORCH_CACHE_DIR=""`` turns it
off for the "before" figure); the in-worker overhead (seconds outside those calls) per API, largest first; then the
per-task answers of
tracker.selectors.releases.fixed_in_by_task (fixed in X / partly_fixed / never / passing / harness / ...) as
a table.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apitester.config import parse_config  # noqa: E402  (Django-free: safe before django.setup)
from apitester.inputs import estimate_bytes  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origin", default="reports/ci_ce_cpu/error_config.txt",
                        help="keep only configs this report file lists (the path inside the reports repository)")
    parser.add_argument("--per-task", type=int, default=0, help="a seeded sample of at most N configs per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-input-bytes", type=int, default=0,
                        help="leave out configs with more input bytes (apitester.inputs.estimate_bytes)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--full", action="store_true", help="scan every release (no bisection)")
    parser.add_argument("--releases", default="all")
    parser.add_argument("--min-input-bytes", type=int, default=0,
                        help="leave out configs with fewer input bytes (to measure the largest on their own)")
    parser.add_argument("--warm-pools", type=int, default=8,
                        help="RUNNER_WARM_POOLS for the run: started worker pools kept idle between lanes (one per "
                             "release for a dedicated matrix host; 0 starts fresh workers for every lane)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep-db", type=Path,
                        help="build the board in this SQLite file (replaced if present) and keep it, to query the "
                             "verdicts afterwards (DATABASE_URL=sqlite:///PATH manage.py shell)")
    args = parser.parse_args(argv)

    if args.keep_db:
        args.keep_db.unlink(missing_ok=True)
        return _measure(args, args.keep_db.resolve())
    with tempfile.TemporaryDirectory(prefix="release-matrix-") as tmp:
        return _measure(args, Path(tmp) / "db.sqlite3")


def _measure(args, db: Path) -> int:
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ["RUNNER_WARM_POOLS"] = str(args.warm_pools)
    os.environ.setdefault("DJANGO_DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()
    from django.core.management import call_command
    from django.db.models import Count, Sum

    from tracker.models import ConfigResult, FailingConfig, Task, TestRun
    from tracker.selectors.releases import describe, fixed_in_by_task
    from tracker.services import runs as run_service
    from tracker.vocab import FixedInKind

    call_command("migrate", "--noinput", verbosity=0)
    call_command("bootstrap_board", stdout=open(os.devnull, "w"))
    cpu = FailingConfig.objects.filter(task__kernel="CPU")
    kept = [c for c in cpu.only("id", "task_id", "config", "origins", "origin_file") if _listed_in(c, args.origin)]
    listed = len(kept)
    if args.max_input_bytes or args.min_input_bytes:
        kept = [c for c in kept if args.min_input_bytes <= _input_bytes(c.config) <= (args.max_input_bytes or math.inf)]
    if args.per_task:
        by_task: dict[int, list[int]] = {}
        for c in kept:
            by_task.setdefault(c.task_id, []).append(c.pk)
        rng = random.Random(args.seed)
        ids = {i for task_ids in by_task.values()
               for i in (rng.sample(sorted(task_ids), args.per_task) if len(task_ids) > args.per_task else task_ids)}
    else:
        ids = {c.pk for c in kept}
    all_cpu = cpu.count()
    FailingConfig.objects.exclude(pk__in=ids).delete()  # (the temp board only)
    tasks = list(Task.objects.filter(kernel="CPU", failing_configs__isnull=False).distinct()
                 .values_list("number", flat=True))
    releases = run_service.parse_releases(args.releases)
    mode = run_service.FULL if args.full else run_service.BISECT
    print(f"{len(ids)} configs of {len(tasks)} CPU tasks (of {all_cpu} CPU-task configs on the board; "
          f"listed in {args.origin}: {listed}"
          f"{f'; {listed - len(kept)} outside {args.min_input_bytes}–{args.max_input_bytes or chr(8734)} input bytes left out' if args.max_input_bytes or args.min_input_bytes else ''}"
          f"{f'; seeded sample of ≤ {args.per_task} per task' if args.per_task else ''}); "
          f"{len(releases)} releases {', '.join(releases)}; mode {mode}; {args.workers} worker(s); "
          f"{args.warm_pools} warm pool(s)", flush=True)

    started, executor_cpu = time.monotonic(), time.process_time()
    parent = run_service.create_matrix_run("tasks", tasks=tasks, releases=releases, lane="cpu",
                                           requested_by="benchmark", mode=mode)
    done: set[int] = set()
    lanes_log = []
    while pending := [c for c in parent.lanes.order_by("id") if c.pk not in done and c.state == "queued"]:
        for lane in pending:
            done.add(lane.pk)
            lane_started = time.monotonic()
            report = run_service.execute_run(lane.pk, workers=args.workers)
            lanes_log.append({"release": lane.release, "configs": lane.total, "seconds": time.monotonic() - lane_started,
                              "state": report.state})
            print(f"  {time.monotonic() - started:7.0f} s  lane {lane.release}: {lane.total} configs in "
                  f"{lanes_log[-1]['seconds']:.0f} s ({report.state})", flush=True)
    wall = time.monotonic() - started
    # the executor's own CPU (leasing shards, storing verdicts, planning rounds): on a machine whose cores the
    # workers fill, it is taken from them
    executor_cpu = time.process_time() - executor_cpu
    parent.refresh_from_db()

    results = ConfigResult.objects.filter(run__parent=parent)
    sums = results.aggregate(n=Count("id"), worker=Sum("seconds"), framework=Sum("framework_seconds"))
    executed, full_scan = sums["n"], len(ids) * len(releases)
    framework = sums["framework"] or 0.0
    statuses = Counter(results.values_list("run__release", "status"))
    answers = fixed_in_by_task()
    kinds = Counter()
    rows = []
    for task in Task.objects.filter(number__in=tasks).order_by("number"):
        answer = answers.get(task.pk)
        kind = answer.kind if answer else FixedInKind.UNTESTED
        kinds[f"fixed in {answer.release}" if kind == FixedInKind.FIXED else kind] += 1
        rows.append((task.number, task.api, kind, describe(answer) if answer else ""))
    out = {"configs": len(ids), "listed": listed, "tasks": len(tasks), "releases": releases, "mode": mode, "workers": args.workers, "warm_pools": args.warm_pools,
           "wall": wall, "rounds": parent.scope.get("round", 1), "executed": executed, "full_scan": full_scan, "worker_seconds": sums["worker"],
           "framework_seconds": framework, "executor_cpu": executor_cpu, "lanes": lanes_log, "answers": kinds, "per_task": rows,
           "statuses": {f"{r} {s}": n for (r, s), n in sorted(statuses.items())}, "state": parent.state}
    print(f"\nmatrix run {parent.state}: wall {wall:.0f} s ({wall / 60:.1f} min); runs executed {executed} of a "
          f"full scan's {full_scan} ({executed / full_scan:.0%}); {len(lanes_log)} lanes in "
          f"{parent.scope.get('round', 1)} rounds")
    print(f"Σ in-worker {sums['worker'] or 0:.0f} s; Σ inside Paddle/Torch calls {framework:.0f} s; "
          f"wall × {args.workers} ÷ Σ framework = {wall * args.workers / framework if framework else float('nan'):.2f} "
          f"(in-worker ÷ framework = {(sums['worker'] or 0) / framework if framework else float('nan'):.2f}); "
          f"executor CPU {executor_cpu:.0f} s")
    # Torch's share and the Torch result cache (apitester.engine.torch_cache: on for a matrix's lanes unless TORCH_CACHE_DIR="")
    from tracker.selectors.runs import run_profile

    profile = run_profile(parent)
    out["phases"], out["torch_cache"] = profile["seconds"], profile["torch_cache"]
    print("Σ per phase: " + ", ".join(f"{name} {s:.0f} s" for name, s in profile["seconds"].items()))
    print(f"Torch result cache: {profile['torch_cache'] or 'off'} (TORCH_CACHE_DIR={os.environ.get('TORCH_CACHE_DIR', 'default')})")
    # where the in-worker overhead goes: Σ (seconds − framework seconds) per API, largest first
    by_api = sorted(((api, (w or 0.0) - (f or 0.0), n) for api, w, f, n in
                     results.values_list("task__api").annotate(w=Sum("seconds"), f=Sum("framework_seconds"),
                                                                n=Count("id")).values_list("task__api", "w", "f", "n")),
                    key=lambda row: -row[1])
    overhead = sum(row[1] for row in by_api)
    out["overhead_by_api"] = [{"api": api, "seconds": s, "runs": n} for api, s, n in by_api]
    print(f"in-worker overhead (Σ seconds − Σ framework) {overhead:.0f} s; by API, largest first:")
    for api, seconds, n in by_api[:8]:
        print(f"  {api:<40} {seconds:7.1f} s over {n} runs ({1000 * seconds / n:.0f} ms a run)")
    print("\nCPU tasks by answer:")
    for kind, n in sorted(kinds.items()):
        print(f"  {kind}: {n}")
    print("\n| No. | API | answer |\n|---|---|---|")
    for number, api, _kind, text in rows:
        print(f"| {number} | `{api}` | {text} |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0 if parent.state == TestRun.State.DONE else 1


def _input_bytes(config: str) -> int:
    try:
        return estimate_bytes(parse_config(config))
    except Exception:
        return 0  # kept: the run reports it as unsupported


def _listed_in(config, origin: str) -> bool:
    names = [config.origin_file, *[o.get("file", "") if isinstance(o, dict) else str(o) for o in config.origins or []]]
    return any(name.endswith(origin) for name in names if name)


if __name__ == "__main__":
    sys.exit(main())
