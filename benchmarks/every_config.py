"""Every CPU-task config on one Paddle release: verdicts (issue 18) and the strict failures to diagnose (issue 19).

    python benchmarks/every_config.py run OUT.jsonl [--python ENV/bin/python] [--minutes M] [--workers 1]
    python benchmarks/every_config.py report A.jsonl [B.jsonl]      # B: a second release, for "fixed in"
    python benchmarks/every_config.py strict-failures A.jsonl > F.txt  # input of diagnosis.py --configs
    python benchmarks/every_config.py reproduction A.jsonl            # the report's failures that fail on A too

``run``: the configs of reports/ci_ce_cpu/error_config.txt whose API is a CPU task of the board seed (the
set benchmarks/runner.py and diagnosis.py read), through apitester.pool.WorkerPool (the runner's pool and
time budget; memory budget as the runner's for two workers), **smallest first** in batches, so a run
stopped by ``--minutes`` has judged every config below some size and says which size. ``--python`` runs
the workers in a release env (var/paddle-envs/X/bin/python). Lines already in OUT are kept and not re-run
(resume). Each line: the engine's verdict (status, strict, draw, draws, ...) plus config, api,
elements, seconds.

``report``: counts of the final and the strict status; the verdict the typical draw alone gives (before
issue 18's draws) next to the worst over the draws, and every class change by API with the draw that made
it. The typical draw's verdict is read off the reported one: when the reported draw is ``typical:0`` it is
the typical draw's; otherwise the typical draw passed (or was a by-design difference with fewer values off,
see apitester.engine.execute.run_config), shown as "pass". With B: per task, the configs failing on A and passing on B
(what "fixed in" rests on), with the typical draw only and with the draws.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from apitester.pool import TimeBudget, WorkerPool, config_elements, default_memory_budget  # noqa: E402
from apitester.vocab import FAILING, PASSING, is_failing  # noqa: E402
from diagnosis import cpu_task_configs  # noqa: E402  (one definition of the CPU-task config set)
from runner import default_seed  # noqa: E402

BATCH = 40  # configs per pool.run call: the pool orders a batch largest first; batches go smallest first
TYPICAL = "typical:0"
NOT_RUN = ("skipped_too_large", "crash", "flaky_crash", "timeout")


def load(path: str | Path) -> dict[str, dict]:
    if not Path(path).exists():
        return {}
    with open(path, encoding="utf-8") as fh:
        return {v["config"]: v for v in map(json.loads, filter(str.strip, fh))}


def draw_name(verdict: dict) -> str:
    draw = verdict.get("draw") or {}
    return f"{draw.get('kind', 'typical')}:{draw.get('seed', 0)}"


def strict_status(verdict: dict) -> str:
    """The strict layer's status (Paddle vs the plain Torch call); the final one where there is no layer."""
    return (verdict.get("strict") or {}).get("status") or verdict["status"]


def typical_status(verdict: dict) -> str:
    """The verdict the typical draw alone gave (see the module docstring)."""
    return verdict["status"] if draw_name(verdict) == TYPICAL else "pass"


def run_main(args) -> int:
    done = load(args.out)
    configs = sorted(cpu_task_configs(args.seed_file or default_seed()), key=config_elements)
    todo = [c for c in configs if c not in done]
    print(f"{len(configs)} CPU-task configs; {len(done)} already in {args.out}; running {len(todo)}", flush=True)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    budget = TimeBudget(base=args.timeout, per_million_elements=args.time_per_melement, maximum=args.time_max)
    started, count = time.monotonic(), 0
    with WorkerPool(args.workers, threads_per_worker=1, memory_budget=default_memory_budget(2),
                    time_budget=budget, python=args.python, readings_per_group=args.readings_per_group,
                    readings=args.readings) as pool, open(args.out, "a", encoding="utf-8") as out:
        print(f"workers: {pool.wait_ready()}", flush=True)
        for first in range(0, len(todo), BATCH):
            if deadline and time.monotonic() > deadline:
                print(f"stopped by --minutes before {todo[first][:120]} ({config_elements(todo[first])} elements)")
                break
            batch = todo[first:first + BATCH]
            for result in pool.run([(c, c) for c in batch]):
                out.write(json.dumps({**result.verdict, "config": result.key, "api": result.key.split("(", 1)[0],
                                      "elements": config_elements(result.key), "seconds": result.seconds,
                                      "paddle": result.build.get("paddle_version")}) + "\n")
                out.flush()
                count += 1
            print(f"  {len(done) + count}/{len(configs)} after {time.monotonic() - started:.0f} s "
                  f"(up to {config_elements(batch[-1])} elements)", file=sys.stderr, flush=True)
    print(f"ran {count} configs in {time.monotonic() - started:.1f} s")
    return 0


def status_counts(verdicts: list[dict], key) -> str:
    return ", ".join(f"{k} {v}" for k, v in Counter(map(key, verdicts)).most_common())


def report_one(name: str, verdicts: dict[str, dict]) -> None:
    rows = list(verdicts.values())
    print(f"== {name}: {len(rows)} configs, up to {max((v['elements'] for v in rows), default=0)} elements")
    print("final:   " + status_counts(rows, lambda v: v["status"]))
    print("strict:  " + status_counts(rows, strict_status))
    print("typical draw only: " + status_counts(rows, typical_status))
    draws = Counter(len(v.get("draws") or []) for v in rows if v["status"] not in NOT_RUN)
    print("draws judged per config: " + ", ".join(f"{k}: {v}" for k, v in sorted(draws.items())))
    changes: dict[tuple, list[dict]] = defaultdict(list)
    for v in rows:
        before = typical_status(v)
        if before != v["status"]:
            changes[(v["api"], before, v["status"])].append(v)
    print(f"class changes typical -> with draws: {sum(map(len, changes.values()))}")
    for (api, before, after), items in sorted(changes.items(), key=lambda kv: -len(kv[1])):
        by_draw = Counter(draw_name(v) for v in items)
        print(f"  {api}: {before} -> {after} x{len(items)} ({', '.join(f'{d} x{n}' for d, n in by_draw.items())}); "
              f"e.g. {items[0]['config'][:110]} | {(items[0].get('message') or '').splitlines()[0][:160]}")


def fixed_between(old: dict[str, dict], new: dict[str, dict], status) -> dict[str, tuple[int, int]]:
    """Per API: (configs failing on old and passing on new, configs failing on old) under ``status``."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for config, v_old in old.items():
        v_new = new.get(config)
        if v_new is None or not is_failing(status(v_old)):
            continue
        out[v_old["api"]][1] += 1
        out[v_old["api"]][0] += status(v_new) == "pass"
    return {api: tuple(n) for api, n in out.items()}


def report_main(args) -> int:
    first = load(args.first)
    report_one(args.first, first)
    if args.second:
        second = load(args.second)
        report_one(args.second, second)
        both = {c: v for c, v in first.items() if c in second}
        print(f"== fixed between the two ({len(both)} configs judged on both): per API, fixed / failing on the first")
        typical = fixed_between(both, second, typical_status)
        drawn = fixed_between(both, second, lambda v: v["status"])
        for api in sorted(set(typical) | set(drawn)):
            mark = "" if typical.get(api) == drawn.get(api) else "   <- changed by the draws"
            print(f"  {api}: typical only {typical.get(api, (0, 0))}, with draws {drawn.get(api, (0, 0))}{mark}")
    return 0


def strict_failures_main(args) -> int:
    for config, v in load(args.first).items():
        if is_failing(strict_status(v)):
            print(config)
    return 0


def reproduction_main(args) -> int:
    """Of the report's failing configs run on one release (its run OUT.jsonl), how many fail there too: the final
    verdict in FAILING reproduces, in PASSING does not, anything else (by design, Torch suspect, no verdict) is not
    judged -- the rule of tracker.selectors.reported.task_reproduction, per API and over all."""
    by_api: dict[str, Counter] = defaultdict(Counter)
    for v in load(args.first).values():
        by_api[v["api"]]["reproduced" if v["status"] in FAILING else "not" if v["status"] in PASSING else "no_verdict"] += 1
    total = sum(by_api.values(), Counter())
    judged = total["reproduced"] + total["not"]
    print(f"{sum(total.values())} configs: {total['reproduced']} of {judged} judged reproduce "
          f"({100 * total['reproduced'] / max(judged, 1):.1f} %); {total['no_verdict']} without a plain verdict")
    shapes = Counter("all" if c["not"] == 0 and c["reproduced"] else "none" if c["reproduced"] == 0 and c["not"] else
                     "some" if c["reproduced"] else "no plain verdict" for c in by_api.values())
    print(f"APIs: {len(by_api)}; every judged config reproduces {shapes['all']}, none {shapes['none']}, some "
          f"{shapes['some']}, no plain verdict {shapes['no plain verdict']}")
    for api, c in sorted(by_api.items(), key=lambda kv: (kv[1]["reproduced"] / max(kv[1]["reproduced"] + kv[1]["not"], 1), kv[0])):
        print(f"  {api}: {c['reproduced']} / {c['reproduced'] + c['not']}" + (f", {c['no_verdict']} no plain verdict"
                                                                              if c["no_verdict"] else ""))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("out")
    run.add_argument("--python", default=None, help="the release env's interpreter for the workers")
    run.add_argument("--workers", type=int, default=1)
    run.add_argument("--minutes", type=float, default=None, help="queue no batch after this many minutes")
    run.add_argument("--timeout", type=float, default=TimeBudget.base)
    run.add_argument("--time-per-melement", type=float, default=TimeBudget.per_million_elements)
    run.add_argument("--time-max", type=float, default=TimeBudget.maximum)
    run.add_argument("--seed-file", type=Path, default=None)
    run.add_argument("--readings", action="store_true",
                     help="ask for the readings (stability, who is closer) of the configs that are not exact")
    run.add_argument("--readings-per-group", type=int, default=3,
                     help="with --readings: for at most this many configs of each API x dtypes group per worker "
                          "(RUNNER_READINGS_PER_GROUP's default; 0: every config)")
    report = sub.add_parser("report")
    report.add_argument("first")
    report.add_argument("second", nargs="?")
    failures = sub.add_parser("strict-failures")
    failures.add_argument("first")
    reproduced = sub.add_parser("reproduction")
    reproduced.add_argument("first")
    args = p.parse_args(argv)
    return {"run": run_main, "report": report_main, "strict-failures": strict_failures_main,
            "reproduction": reproduction_main}[args.command](args)


if __name__ == "__main__":
    os.environ.setdefault("GLOG_minloglevel", "2")
    sys.exit(main())
