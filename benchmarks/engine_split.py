"""Where run_config's time goes, outside Paddle's and Torch's own calls (#20 item 5: the engine's overhead).

    .venv/bin/python benchmarks/engine_split.py [--origin PATH] [--sample 120] [--seed 0]
        [--max-input-bytes 16777216] [--min-input-bytes 0] [--api paddle.sum] [--json OUT]

A seeded sample of the report file's configs (default: reports/ci_ce_cpu/error_config.txt under $PADDLEAPITEST_REPORTS,
read in place, never copied), each run once through apitester.engine.execute.run_config on the installed Paddle.
The engine's steps are timed by wrapping the module-level functions run_config calls (no profiler, so the
Python-heavy steps are not inflated): the calls into Paddle and Torch (the call clock, framework_seconds),
drawing inputs (materialise_draw), handing them to the frameworks (_convert), reading outputs back
(_paddle_out/_torch_out), the output gradients (_random_grad), comparing (compare_outputs); the rest is
parsing, binding and bookkeeping. Prints each step's seconds and share of Σ run_config seconds, and
Σ seconds ÷ Σ framework seconds (1.0 would be an engine that costs nothing).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apitester import inputs  # noqa: E402
from apitester.engine import execute  # noqa: E402
from apitester.config import ConfigSyntaxError, parse_config  # noqa: E402
from apitester.reports import reports_dir  # noqa: E402

STEPS = {  # step name -> (module, attribute) wrapped with a timer
    "draw inputs": (inputs, "materialise_draw"),
    "to tensors": (execute, "_convert"),
    "outputs to numpy": (execute, "_paddle_out"),
    "outputs to numpy ": (execute, "_torch_out"),
    "output gradients": (execute, "_random_grad"),
    "compare": (execute, "compare_outputs"),
}


def _timed(fn, bucket: dict, name: str):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            bucket[name.strip()] += time.perf_counter() - start
    return wrapper


def sample_configs(path: Path, n: int, seed: int, lo: int, hi: int, api: str = "") -> list[str]:
    kept = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            call = parse_config(line)
        except ConfigSyntaxError:
            continue
        if api and call.api != api:
            continue
        size = inputs.estimate_bytes(call)
        if size >= lo and (not hi or size <= hi):
            kept.append(line)
    random.Random(seed).shuffle(kept)
    return kept[:n] if n else kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origin", type=Path, default=None)
    parser.add_argument("--sample", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-input-bytes", type=int, default=16 * 2**20)
    parser.add_argument("--min-input-bytes", type=int, default=0)
    parser.add_argument("--api", default="", help="only this API's configs (paddle.sum)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    origin = args.origin or reports_dir() / "reports/ci_ce_cpu/error_config.txt"
    configs = sample_configs(origin, args.sample, args.seed, args.min_input_bytes, args.max_input_bytes, args.api)
    if not configs:
        print(f"no configs in {origin} within the byte bounds", file=sys.stderr)
        return 1
    execute.frameworks()
    execute.run_config(configs[0])  # warm-up: first-call costs of both frameworks are not a config's
    bucket: dict[str, float] = defaultdict(float)
    for name, (module, attr) in STEPS.items():
        setattr(module, attr, _timed(getattr(module, attr), bucket, name))
    total = framework = 0.0
    statuses: dict[str, int] = defaultdict(int)
    for config in configs:
        verdict = execute.run_config(config)
        total += verdict.seconds
        framework += verdict.framework_seconds or 0.0
        statuses[verdict.status] += 1
    steps = {"Paddle/Torch calls": framework, **bucket}
    steps["parse, bind, bookkeeping"] = total - sum(steps.values())
    print(f"{len(configs)} configs from {origin} (inputs {args.min_input_bytes}–{args.max_input_bytes or '∞'} bytes, "
          f"seed {args.seed}); Σ run_config {total:.1f} s")
    for name, seconds in sorted(steps.items(), key=lambda item: -item[1]):
        print(f"  {name:<26} {seconds:8.2f} s  {100 * seconds / total if total else 0:5.1f} %")
    ratio = total / framework if framework else float("nan")
    print(f"Σ run_config ÷ Σ framework = {ratio:.2f}; verdicts {dict(statuses)}")
    if args.json:
        args.json.write_text(json.dumps({"configs": len(configs), "seconds": total, "steps": steps,
                                         "ratio": ratio, "statuses": statuses}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
