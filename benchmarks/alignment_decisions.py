"""The alignment decision per API × dtype on two Paddle releases, and the flakiness of repeated runs (issue #47).

    .venv/bin/python benchmarks/alignment_decisions.py --db var/alignment.sqlite3 [--per-task 2]
        [--max-input-bytes 1048576] [--releases 3.0.0,3.3.1] [--repeats 5] [--workers 2] [--seed 0]
    .venv/bin/python benchmarks/alignment_decisions.py --db var/alignment.sqlite3 --report-only

On the SQLite file --db (replaced unless --report-only; the main database is never touched): migrate,
bootstrap_board (the PaddleAPITest reports at $PADDLEAPITEST_REPORTS, read in place), keep a seeded sample of at
most --per-task CPU-task configs per task (inputs ≤ --max-input-bytes), then a full matrix run with the readings
(stability and who is closer: what the alignment page's button starts) on each of --releases, then --repeats − 1
more plain runs of the same configs on the main environment's release (its matrix lane is the first of the
--repeats runs). Prints the alignment decision table of each release (tracker.selectors.alignment: the decision,
its reason and the configs behind it) and the flakiness of every config over the repeated runs
(tracker.selectors.flakiness: Wilson lower bound of the share of results that disagree with the config's usual
outcome).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from release_matrix import _input_bytes, _listed_in  # noqa: E402  (one definition of the sample's filters)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--origin", default="reports/ci_ce_cpu/error_config.txt")
    parser.add_argument("--per-task", type=int, default=2)
    parser.add_argument("--max-input-bytes", type=int, default=1 << 20)
    parser.add_argument("--releases", default="3.0.0,3.3.1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    os.environ["DATABASE_URL"] = f"sqlite:///{args.db.resolve()}"
    os.environ.setdefault("DJANGO_DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if not args.report_only:
        args.db.unlink(missing_ok=True)
    import django
    django.setup()
    if not args.report_only:
        _run(args)
    _report()
    return 0


def _sample(args) -> list[int]:
    from django.core.management import call_command

    from tracker.models import FailingConfig, Task

    call_command("migrate", "--noinput", verbosity=0)
    call_command("bootstrap_board", stdout=open(os.devnull, "w"))
    kept = [c for c in FailingConfig.objects.filter(task__kernel="CPU").only("id", "task_id", "config", "origins",
                                                                                "origin_file")
            if _listed_in(c, args.origin) and _input_bytes(c.config) <= args.max_input_bytes]
    by_task: dict[int, list[int]] = {}
    for c in kept:
        by_task.setdefault(c.task_id, []).append(c.pk)
    rng = random.Random(args.seed)
    ids = {i for task_ids in by_task.values()
           for i in (rng.sample(sorted(task_ids), args.per_task) if len(task_ids) > args.per_task else task_ids)}
    FailingConfig.objects.exclude(pk__in=ids).delete()  # (this benchmark's own database only)
    tasks = list(Task.objects.filter(kernel="CPU", failing_configs__isnull=False).distinct()
                 .values_list("number", flat=True))
    print(f"{len(ids)} configs of {len(tasks)} CPU tasks (≤ {args.per_task} per task, seed {args.seed}, inputs ≤ "
          f"{args.max_input_bytes} bytes)", flush=True)
    return tasks


def _run(args) -> None:
    from tracker.selectors.envs import main_version
    from tracker.services import runs as run_service

    tasks = _sample(args)
    releases = run_service.parse_releases(args.releases)
    started = time.monotonic()
    parent = run_service.create_matrix_run("tasks", tasks=tasks, releases=releases, lane="cpu",
                                           requested_by="benchmark", mode=run_service.FULL, readings=True)
    for lane in parent.lanes.order_by("id"):
        report = run_service.execute_run(lane.pk, workers=args.workers)
        print(f"  {time.monotonic() - started:6.0f} s  readings run on {lane.release}: {report.state}", flush=True)
    for repeat in range(2, args.repeats + 1):
        run = run_service.create_run("tasks", tasks=tasks, lane="cpu", requested_by="benchmark")
        report = run_service.execute_run(run.pk, workers=args.workers)
        print(f"  {time.monotonic() - started:6.0f} s  run {repeat} of {args.repeats} on {main_version()}: "
              f"{report.state}", flush=True)


def _report() -> None:
    from tracker.models import ConfigResult
    from tracker.selectors import alignment, flakiness

    for release in alignment.alignment_releases():
        rows = alignment.alignment_table(release)
        decisions = Counter(row.decision for row in rows)
        print(f"\nPaddle {release}: {len(rows)} API × dtype rows of {sum(r.configs for r in rows)} configs; decisions "
              + ", ".join(f"{d} {n}" for d, n in sorted(decisions.items())))
        for decision in sorted(decisions):
            backing = [r for r in rows if r.decision == decision]
            reasons = Counter(r.advice for r in backing)
            print(f"  {decision}: {len(backing)} rows, {sum(r.configs for r in backing)} configs "
                  f"({sum(r.exact for r in backing)} exact, {sum(r.read_configs for r in backing)} inexact with a "
                  f"float64 reading, {sum(r.not_read for r in backing)} inexact unread); why: "
                  + ", ".join(f"{a} {n}" for a, n in reasons.most_common()))
        print("| API | dtype | configs | exact | dULP 0/1/2–3/>3 | Paddle off / Torch off (read) | decision | why |")
        print("|---|---|---|---|---|---|---|---|")
        for row in rows:
            hist = "/".join(str(row.ulp_histogram[b]) for b in alignment.ULP_BINS)
            print(f"| `{row.api}` | {row.dtype} | {row.configs} | {row.exact} | {hist} | "
                  f"{row.closer['paddle_off']} / {row.closer['torch_off']} ({row.read_configs}) | {row.decision} | "
                  f"{row.advice} |")
    scores = flakiness.config_flakiness()
    repeated = [s for s in scores.values() if s.results > 1]
    flaky = sorted((s for s in repeated if s.flaky), key=lambda s: -s.score)
    runs = Counter(s.results for s in repeated)
    print(f"\nflakiness: {len(repeated)} (config, release) pairs with repeated results "
          f"({', '.join(f'{n} with {k} results' for k, n in sorted(runs.items()))}); {len(flaky)} flaky")
    for score in flaky:
        config = ConfigResult.objects.filter(failing_config_id=score.config_id).values_list(
            "failing_config__config", flat=True).first()
        print(f"  {score.score:.3f}  {score.disagreeing}/{score.results} on {score.release}  "
              f"{dict(score.outcomes)}  {config[:120]}")


if __name__ == "__main__":
    sys.exit(main())
