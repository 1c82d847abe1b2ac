"""Diagnosis (issue 19) over the CPU tasks' strictly failing configs: oracle readings, shrink figures,
and how many shrunk configs' own repro scripts reproduce the same failure.

    python benchmarks/diagnosis.py [--sample N | --limit N] [--max-trials 200] [--max-seconds 60]
                                   [--max-input-bytes 16777216] [--seed-file PATH]

Configs: reports/ci_ce_cpu/error_config.txt under apitester.reports.reports_dir()
($PADDLEAPITEST_REPORTS, else ../shared/paddleapitest), restricted to the CPU tasks of the board seed.
Each is diagnosed in this process (apitester.diagnose.diagnose_config); a config whose strict layer
does not fail on this Paddle is counted and left out.  Each shrunk config's repro script is written to
a temporary file and run with this python; "reproduced" = exit status 1 and the script's reported
(status, direction, output) equal to the diagnosis' failure.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from apitester.config import parse_config  # noqa: E402
from apitester.diagnose import diagnose_config, group_failures  # noqa: E402
from apitester.inputs import estimate_bytes  # noqa: E402
from apitester.reports import discover_report_files, iter_file_configs, reports_dir  # noqa: E402
from runner import cpu_task_apis, default_seed  # noqa: E402  (the board seed's CPU tasks, one definition)


def cpu_task_configs(seed_file: Path) -> list[str]:
    apis = cpu_task_apis(seed_file)
    newest = [f for f in discover_report_files(reports_dir()) if f.rel == "reports/ci_ce_cpu/error_config.txt"]
    return list(dict.fromkeys(line.config for f in newest for line in iter_file_configs(f) if line.api in apis))


def reproduces(diagnosis: dict) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "repro.py"
        path.write_text(diagnosis["repro"]["script"])
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    try:
        outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return False
    failure = diagnosis["failure"]
    status = "paddle_error" if failure["status"].startswith("paddle_error") else failure["status"]
    return proc.returncode == 1 and outcome == {"status": status, "direction": failure["direction"],
                                                "output": failure["output"] if status != "paddle_error" else None}


def _small(config: str, limit: int) -> bool:
    try:
        return estimate_bytes(parse_config(config)) <= limit
    except Exception:
        return True  # a syntax error: diagnose_config says so


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sample", type=int, help="a random sample (seeded, 0) of N configs")
    p.add_argument("--limit", type=int, help="the first N configs")
    p.add_argument("--max-trials", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--max-input-bytes", type=int, default=1 << 24, help="skip configs with more input bytes")
    p.add_argument("--seed-file", type=Path, default=None)
    p.add_argument("--jsonl", type=Path, default=None, help="write every diagnosis here")
    args = p.parse_args(argv)
    configs = cpu_task_configs(args.seed_file or default_seed())
    total = len(configs)
    large = [c for c in configs if not _small(c, args.max_input_bytes)]
    configs = [c for c in configs if c not in set(large)]
    if args.sample:
        configs = random.Random(0).sample(configs, min(args.sample, len(configs)))
    if args.limit:
        configs = configs[: args.limit]
    print(f"{total} CPU-task configs; {len(large)} over {args.max_input_bytes} input bytes left out; "
          f"diagnosing {len(configs)}", flush=True)
    diagnoses, not_failing = [], Counter()
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    for i, config in enumerate(configs, 1):
        d = diagnose_config(config, max_trials=args.max_trials, max_seconds=args.max_seconds)
        if d.get("diagnosed"):
            d["reproduced"] = reproduces(d)
            diagnoses.append(d)
        else:
            not_failing[(d.get("verdict") or {}).get("strict_status", d.get("reason", "?")[:40])] += 1
        if out:
            out.write(json.dumps(d) + "\n")
        print(f"  {i}/{len(configs)} {d.get('seconds', 0):.1f} s "
              f"{(d.get('failure') or {}).get('reading', '-')} {config[:100]}", file=sys.stderr, flush=True)
    report(diagnoses, not_failing)
    return 0


def report(diagnoses: list[dict], not_failing: Counter) -> None:
    print(f"strictly failing, diagnosed: {len(diagnoses)}; not diagnosed: "
          + ", ".join(f"{k} {v}" for k, v in not_failing.most_common()))
    if not diagnoses:
        return
    readings = Counter(d["failure"]["reading"] for d in diagnoses)
    print("readings (failing output): " + ", ".join(f"{k} {v}" for k, v in readings.most_common()))
    reasons = Counter(d["reading"].get("no_oracle") for d in diagnoses if d["reading"].get("no_oracle"))
    print("  no_oracle reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()))
    shrinks = [d["shrink"] for d in diagnoses]
    before = [s["elements_before"] for s in shrinks]
    after = [s["elements_after"] for s in shrinks]
    worst = max(shrinks, key=lambda s: s["elements_after"])
    print(f"elements before -> after: median {statistics.median(before):g} -> {statistics.median(after):g}; "
          f"worst after: {worst['elements_before']} -> {worst['elements_after']}")
    trials, seconds = [s["trials"] for s in shrinks], [s["seconds"] for s in shrinks]
    print(f"trials per shrink: median {statistics.median(trials):g}, max {max(trials)}; seconds per shrink: "
          f"median {statistics.median(seconds):.2f}, max {max(seconds):.2f}; stopped: "
          + ", ".join(f"{k} {v}" for k, v in Counter(s["stopped"] for s in shrinks).most_common()))
    same = sum(d["reproduced"] for d in diagnoses)
    print(f"repro script reproduces the same failure: {same}/{len(diagnoses)} = {100 * same / len(diagnoses):.1f} %")
    for d in diagnoses:
        if not d["reproduced"]:
            print(f"  not reproduced: {d['shrink']['config'][:140]}")
    groups = group_failures(diagnoses)
    print(f"distinct failures: {len(groups)} among {len(diagnoses)} configs")


if __name__ == "__main__":
    sys.exit(main())
