"""Readings of the float64-only configs of the CPU report on this environment's Paddle (issue 34, item 3/6):
how many strict backward failures the float64 oracle leaves at ``no_oracle`` (float64_config) and how many the
gradient check now names a side for.  Reads the report at run time (``apitester.reports.reports_dir``).

    .venv/bin/python benchmarks/gradient_readings.py [--max-elements 200000] [--jsonl FILE]
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.config import ConfigSyntaxError, parse_config  # noqa: E402
from apitester.diagnosis.diagnose import diagnose_config  # noqa: E402
from apitester.reports import reports_dir  # noqa: E402

OTHER_DTYPES = ('"float32"', '"float16"', '"bfloat16"', '"int', '"uint', '"complex', '"bool')


def float64_lines() -> list[str]:
    path = reports_dir() / "reports" / "ci_ce_cpu" / "error_config.txt"
    lines = [line.strip() for line in path.read_text().splitlines() if '"float64"' in line]
    return [line for line in lines if not any(d in line for d in OTHER_DTYPES)]


def elements(line: str) -> int:
    try:
        return sum(math.prod(t.shape) for t in parse_config(line).tensors())
    except ConfigSyntaxError:
        return -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-elements", type=int, default=200_000)
    parser.add_argument("--jsonl", default=None, help="write one line per config here")
    args = parser.parse_args()
    began, counts, by_api = time.perf_counter(), collections.Counter(), collections.Counter()
    sink = open(args.jsonl, "w") if args.jsonl else None
    lines = float64_lines()
    for line in lines:
        n = elements(line)
        if not 0 <= n <= args.max_elements:
            counts["left out (size)"] += 1
            continue
        d = diagnose_config(line, max_trials=60, max_seconds=20)
        if not d.get("diagnosed"):
            counts["no strict failure" if "no strict failure" in d.get("reason", "") else "not diagnosed"] += 1
            continue
        reading, failure = d["reading"], d["failure"]
        key = (failure["status"], failure["direction"], reading["reading"], reading.get("oracle") or "float64_oracle")
        counts[key] += 1
        by_api[(line.split("(", 1)[0], reading["reading"], reading.get("oracle") or "-")] += 1
        if sink:
            sink.write(json.dumps({"config": line, "reading": reading, "gradient_check": d.get("gradient_check")}) + "\n")
    print(f"{len(lines)} float64-only configs, {time.perf_counter() - began:.0f} s")
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {key}")
    print("by API:")
    for key, n in sorted(by_api.items()):
        print(f"  {n:4d}  {key}")


if __name__ == "__main__":
    main()
