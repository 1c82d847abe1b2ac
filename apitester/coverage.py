"""``python -m apitester coverage``: how many report configs the engine runs to a verdict.

    python -m apitester coverage PATH... [--sample N] [--workers N] [--only-apis FILE_OR_LIST]
        [--timeout S] [--time-per-melement S] [--time-max S] [--budget-gib G] [--jsonl OUT]

PATHs are config files or directories (every *.txt but error_api.txt); lines are deduped.
This is counting on top of ``apitester.pool.WorkerPool`` -- the runner's pool, with its memory
model, time budget and crash retry: a config that kills its worker twice counts as ``crash``,
one that kills it once and gives a verdict on the retry as ``flaky_crash`` (counted with the
crashes), one that runs past its time budget (``--timeout`` + ``--time-per-melement`` per
million input elements, capped at ``--time-max``) as ``timeout``; configs whose estimated
peak memory exceeds the worker's memory budget are not run and count as ``skipped_too_large``: by default
the pool's (``pool.default_memory_budget``: 60 % of the memory available shared by the workers, stated at
the end of the ``OTHER`` line), or ``--budget-gib``.

Per API: configs, verdict (pass / accuracy_error / dtype_mismatch / shape_mismatch /
paddle_error / documented_difference / torch_suspect: the engine judged the config),
unsupported (the engine cannot run it: no spec, arguments do not bind, syntax), engine_error
(an exception inside apitester), then the other counts and the per-status counts.  The last
line is exactly ``TOTAL configs=N verdict=M unsupported=U engine_error=E``; the line before it
gives ``skipped_too_large``, ``crash`` (``flaky_crash`` included, and also given on its own),
``timeout`` and (after ``flaky_crash``) ``torch_error`` (the Torch reference raised: no verdict, as on the board), so
N = M + U + E + those four.  Before it, one ``STALE …`` line per declared known failure that the run does not
reproduce (``apitester.known``: configs in its scope were judged on that Paddle release, none gives its status).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from enum import StrEnum
from pathlib import Path

from .config import api_name
from .known import describe as describe_stale
from .known import stale_known_failures
from .pool import CRASH, FLAKY_CRASH, MEMORY_FACTOR, TimeBudget, WorkerPool
from .reports import TASK_NAME_ALIASES, iter_config_lines
from .vocab import NO_VERDICT, RUNNER_FAILURES, Device, Status

# Coverage's counts, read from apitester.vocab's one classification: a config reaches a verdict when the
# engine judged it (pass, a Paddle failure of the comparison, a documented difference, a Torch suspect);
# the runner's crash / timeout and every no-verdict status (unsupported, torch_error, skipped_too_large)
# are counted apart, as the board counts them.
VERDICT_STATUSES = tuple(s for s in Status if s not in NO_VERDICT and s not in RUNNER_FAILURES)
OTHER_STATUSES = (Status.SKIPPED_TOO_LARGE, Status.CRASH, Status.TIMEOUT, Status.TORCH_ERROR)


class Category(StrEnum):
    """What the coverage report counts a config as: judged, or one of the reasons it was not."""
    VERDICT = "verdict"
    UNSUPPORTED = Status.UNSUPPORTED
    ENGINE_ERROR = "engine_error"  # unsupported because the engine itself raised (its bug, not a gap)
    SKIPPED_TOO_LARGE = Status.SKIPPED_TOO_LARGE
    CRASH = Status.CRASH
    TIMEOUT = Status.TIMEOUT
    TORCH_ERROR = Status.TORCH_ERROR


# The categories listed with a few examples per API: the engine's gaps (and its runner's failures).
GAP_CATEGORIES = (Category.UNSUPPORTED, Category.ENGINE_ERROR, Category.CRASH, Category.TIMEOUT, Category.TORCH_ERROR)


def category(verdict: dict) -> str:
    """The config's Category (an unknown status is counted under its own name)."""
    status = verdict["status"]
    if status == Status.UNSUPPORTED:
        return Category.ENGINE_ERROR if verdict.get("engine_error") else Category.UNSUPPORTED
    if status in VERDICT_STATUSES:
        return Category.VERDICT
    if status == FLAKY_CRASH:  # died once, the retry gave a verdict: counted with the crashes
        return Category.CRASH
    return status


def read_api_list(text: str) -> set[str]:
    """A file of API names (one per line or comma-separated) or a comma-separated list."""
    # A long comma-separated list is not a file name (and is too long to stat as one).
    is_file = "," not in text and len(text) < 255 and Path(text).is_file()
    raw = Path(text).read_text(encoding="utf-8") if is_file else text
    names = {n.strip() for chunk in raw.splitlines() for n in chunk.split(",") if n.strip()}
    names |= {TASK_NAME_ALIASES[n] for n in names if n in TASK_NAME_ALIASES}
    return names


def collect_configs(paths: list[str], only: set[str] | None, sample: int | None, seed: int = 0) -> dict[str, list[str]]:
    """Distinct configs per API (file order), filtered and sampled per API."""
    seen: set[str] = set()
    per_api: dict[str, list[str]] = defaultdict(list)
    for _path, _lineno, line in iter_config_lines(paths):
        if line in seen:
            continue
        seen.add(line)
        api = api_name(line)
        if only is not None and api not in only:
            continue
        per_api[api].append(line)
    if sample:
        rng = random.Random(seed)
        for api, configs in per_api.items():
            if len(configs) > sample:
                keep = sorted(rng.sample(range(len(configs)), sample))
                per_api[api] = [configs[i] for i in keep]
    return dict(sorted(per_api.items()))


def run_many(per_api: dict[str, list[str]], *, workers: int, memory_budget: int | None, time_budget: TimeBudget,
             device: Device | str = Device.CPU, atol: float = 1e-2, rtol: float = 1e-2, seed: int = 0,
             threads: int | None = None, progress=None, on_pool=None, readings: bool = False):
    """Run every config through a WorkerPool (``memory_budget`` None: the pool derives it from the host);
    yields verdict dicts (with ``config``, ``api``, ``seconds`` and ``attempts``) in completion order.
    ``on_pool(pool)`` is called once the pool is made."""
    jobs = [((api, config), config) for api, configs in per_api.items() for config in configs]
    if not jobs:
        return
    with WorkerPool(max(1, min(workers, len(jobs))), threads_per_worker=threads, memory_budget=memory_budget,
                    time_budget=time_budget, device=device, atol=atol, rtol=rtol, seed=seed,
                    readings=readings) as pool:
        if on_pool:
            on_pool(pool)
        for done, result in enumerate(pool.run(jobs), 1):
            api, config = result.key
            if progress:
                progress(done, len(jobs))
            yield {**result.verdict, "config": config, "api": api, "seconds": result.seconds,
                   "attempts": result.attempts, "paddle_version": (result.build or {}).get("paddle_version", "")}


# ---------------------------------------------------------------- main


def coverage_main(argv: list[str]) -> int:
    defaults = TimeBudget()
    p = argparse.ArgumentParser(prog="python -m apitester coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="config files or directories")
    p.add_argument("--sample", type=int, default=None, help="at most N configs per API (deterministic sample)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--only-apis", "--api-filter", dest="only_apis", default=None,
                   help="restrict to these APIs: a file (one per line) or a comma-separated list")
    p.add_argument("--timeout", type=float, default=defaults.base,
                   help=f"seconds any config may take (default {defaults.base:g}); larger configs get more, "
                        "see --time-per-melement")
    p.add_argument("--time-per-melement", type=float, default=defaults.per_million_elements,
                   help=f"extra seconds per million input elements (default {defaults.per_million_elements:g})")
    p.add_argument("--time-max", type=float, default=defaults.maximum,
                   help=f"cap of a config's time budget (default {defaults.maximum:g}; never below --timeout)")
    p.add_argument("--budget-gib", type=float, default=None,
                   help=f"skip configs whose estimated peak ({MEMORY_FACTOR}x input bytes) exceeds this many GiB "
                        "(default: 60 %% of the memory available shared by the workers)")
    p.add_argument("--device", choices=tuple(Device), type=Device, default=Device.CPU)
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="math threads per worker")
    p.add_argument("--readings", action="store_true",
                   help="also read stability and who is closer for every config that is not exact (off by default)")
    p.add_argument("--jsonl", default=None, help="also write every verdict as JSON lines to this file")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)

    for path in args.paths:
        if not Path(path).exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return 2
    only = read_api_list(args.only_apis) if args.only_apis else None
    per_api = collect_configs(args.paths, only, args.sample, args.seed)
    time_budget = TimeBudget(base=args.timeout, per_million_elements=args.time_per_melement,
                             maximum=max(args.time_max, args.timeout))

    start = time.monotonic()

    def progress(done, total):
        if not args.quiet and (done % 50 == 0 or done == total):
            rate = done / max(time.monotonic() - start, 1e-9)
            print(f"  {done}/{total} configs ({rate:.1f}/s)", file=sys.stderr, flush=True)

    results: dict[str, list[dict]] = defaultdict(list)
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    budget = {}  # the pool's statement of its memory budget
    try:
        for verdict in run_many(per_api, workers=args.workers,
                                memory_budget=int(args.budget_gib * 2**30) if args.budget_gib else None,
                                time_budget=time_budget, device=args.device, atol=args.atol, rtol=args.rtol,
                                seed=args.seed, threads=args.threads, progress=progress, readings=args.readings,
                                on_pool=lambda pool: budget.update(origin=pool.memory_budget_origin)):
            results[verdict["api"]].append(verdict)
            if out:
                out.write(json.dumps(verdict) + "\n")
    finally:
        if out:
            out.close()

    totals: Counter[str] = Counter()
    for api in sorted(results):
        verdicts = results[api]
        cats = Counter(category(v) for v in verdicts)
        statuses = Counter(v["status"] for v in verdicts)
        totals.update(cats)
        totals["configs"] += len(verdicts)
        totals[FLAKY_CRASH] += statuses[FLAKY_CRASH]
        status_text = " ".join(f"{s}={statuses[s]}" for s in sorted(statuses))
        print(f"{api} configs={len(verdicts)} verdict={cats['verdict']} unsupported={cats['unsupported']} "
              f"engine_error={cats['engine_error']} skipped_too_large={cats['skipped_too_large']} "
              f"crash={cats[CRASH]} timeout={cats['timeout']} torch_error={cats['torch_error']} | {status_text}")
        gaps = [v for v in verdicts if category(v) in GAP_CATEGORIES]
        for v in gaps[:3]:  # a few examples per API; --jsonl has them all
            print(f"    {v['status']}{' (engine error)' if v.get('engine_error') else ''}: "
                  f"{(v.get('message') or '')[:200]} <- {v['config'][:160]}")
    for stale in stale_known_failures(v for verdicts in results.values() for v in verdicts):
        print(describe_stale(stale))
    print(f"OTHER skipped_too_large={totals['skipped_too_large']} crash={totals[CRASH]} timeout={totals['timeout']} "
          f"flaky_crash={totals[FLAKY_CRASH]} torch_error={totals['torch_error']} "
          f"seconds={time.monotonic() - start:.1f} memory_budget=({budget.get('origin', 'no pool: no config')})")
    print(f"TOTAL configs={totals['configs']} verdict={totals['verdict']} "
          f"unsupported={totals['unsupported']} engine_error={totals['engine_error']}")
    return 0
