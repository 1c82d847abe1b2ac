"""The reference drift between two Torch versions (issue #46), measured through the board itself — or, with
``--threads N``, the verdicts that move between one thread and N.

    .venv/bin/python benchmarks/torch_drift.py --torch 2.14.1 [--per-api 3] [--max-elements 1000000]
                                               [--db /tmp/drift.sqlite3] [--workers 1]
    .venv/bin/python benchmarks/torch_drift.py --threads 2 [--per-api 3] ...

Needs an env pairing the main env's Paddle with that Torch (`manage.py paddle_envs add <main release> --torch
2.14.1`: other Torch builds carry ~4 GB of CUDA libraries on Linux, so this is never part of the suite). On a scratch
SQLite board (the fixture and PaddleAPITest's reports, PADDLEAPITEST_REPORTS), it takes the ``--per-api`` smallest
configs of each CPU task's API (at most ``--max-elements`` input elements), starts one run on the project's Torch and
one with ``--torch``, both pinned to one thread, executes them side by side (`retest --inline --run`, one process
each), and prints each run's wall time and statuses, then `manage.py torch_drift`: per API, the configs whose
strict / exact verdict changes when only Torch moves. With ``--threads N`` the second run is on the project's Torch
at N threads, and what is printed is the thread-sensitive configs (the same build, only the thread count moved).
docs/measurements.md keeps the figures with the machine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def setup(db: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("bootstrap_board", stdout=open(os.devnull, "w"))


def sample(per_api: int, max_elements: int) -> list[int]:
    """The ``per_api`` smallest configs of each CPU task's API (by input elements, at most ``max_elements``)."""
    from apitester.pool import config_elements
    from tracker.models import FailingConfig

    by_api: dict[str, list[tuple[int, int]]] = {}
    for pk, api, text in FailingConfig.objects.filter(task__kernel="CPU").values_list("id", "task__api", "config"):
        elements = config_elements(text)
        if elements is not None and elements <= max_elements:
            by_api.setdefault(api, []).append((elements, pk))
    return sorted(pk for found in by_api.values() for _elements, pk in sorted(found)[:per_api])


def execute_side_by_side(runs, workers: int) -> dict[int, float]:
    """`retest --inline --run ID` for each run at the same time, one process each; wall seconds per run."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    procs = {run.pk: subprocess.Popen([sys.executable, "manage.py", "retest", "--inline", "--run", str(run.pk),
                                       "--workers", str(workers)], cwd=REPO, env=env, stdout=subprocess.DEVNULL)
             for run in runs}
    seconds = {}
    pending = dict(procs)
    while pending:
        for pk, proc in list(pending.items()):
            if proc.poll() is not None:
                if proc.returncode != 0:
                    raise SystemExit(f"run {pk}: retest exited {proc.returncode}")
                seconds[pk] = time.perf_counter() - started
                del pending[pk]
        time.sleep(0.5)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    axis = parser.add_mutually_exclusive_group(required=True)
    axis.add_argument("--torch", help="the other Torch (an env pairs the main release with it)")
    axis.add_argument("--threads", type=int, help="compare one thread with this many instead")
    parser.add_argument("--per-api", type=int, default=3)
    parser.add_argument("--max-elements", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path(tempfile.mkdtemp(prefix="drift-")) / "db.sqlite3")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    setup(args.db)
    from django.core.management import call_command

    from tracker.models import ConfigResult, FailingConfig
    from tracker.services.runs import create_run

    ids = sample(args.per_api, args.max_elements)
    tasks = sorted(set(FailingConfig.objects.filter(id__in=ids).values_list("task__number", flat=True)))
    ours = create_run("tasks", tasks=tasks, configs=ids, threads=1)
    other = create_run("tasks", tasks=tasks, configs=ids, threads=args.threads or 1, torch=args.torch or "")
    label = f"Torch {args.torch}" if args.torch else f"{args.threads} threads"
    print(f"{len(ids)} configs of {len(tasks)} CPU tasks; run {ours.pk} on the project's Torch at one thread, run "
          f"{other.pk} on {label} (db {args.db})", flush=True)
    seconds = execute_side_by_side([ours, other], args.workers)
    for run, label in ((ours, "project's Torch, 1 thread"), (other, label)):
        statuses = Counter(ConfigResult.objects.filter(run=run).values_list("status", flat=True))
        torch = set(ConfigResult.objects.filter(run=run).values_list("torch_version", flat=True))
        print(f"run {run.pk} ({label}, reported {', '.join(sorted(torch))}): {seconds[run.pk]:.0f} s, "
              f"{dict(sorted(statuses.items()))}")
    if args.torch:
        call_command("torch_drift")
        return
    from tracker.selectors.provenance import thread_sensitive

    moved = thread_sensitive(ConfigResult.objects.filter(run__in=[ours, other]))
    apis = Counter(ConfigResult.objects.filter(run=ours, failing_config_id__in=moved)
                   .values_list("task__api", flat=True))
    print(f"{len(moved)} thread-sensitive config(s) of {len(ids)}: {dict(sorted(apis.items()))}")
    for config_id, verdicts in moved.items():
        text = ConfigResult.objects.filter(failing_config_id=config_id).values_list("failing_config__config",
                                                                                    flat=True).first()
        print(f"  {text[:160]}  —  " + ", ".join(f"{n} thread(s): {verdict}" for n, verdict in verdicts))


if __name__ == "__main__":
    main()
