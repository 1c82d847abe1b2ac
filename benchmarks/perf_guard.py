"""The performance guard (issue #43): the engine at a named baseline commit and at this checkout, one process each,
side by side on the same configs, and where this checkout's time goes.

    .venv/bin/python benchmarks/perf_guard.py [--baseline 288efb9] [--sample 3] [--max-input-mib 64]
                                              [--readings] [--keep DIR]

The configs: at most ``--sample`` per API of PaddleAPITest's CPU reports (``reports/ci_ce_cpu``, every file, the
coverage command's seeded sample), those of at most ``--max-input-mib`` MiB of inputs (the engine's estimate) —
a few configs over it (deform_conv2d on [20, 64, 152, 272]) spend minutes inside the frameworks themselves and
would hide the engine's own cost. Both sides run ``python -m apitester coverage FILE --workers 1 --threads 1``
at the same time (a ``git worktree`` of the baseline, the same .venv), so both see the same machine. Prints each
side's wall seconds and their ratio, the configs whose status, ``exact`` or ``max_ulp`` differ between the two
(where the baseline has them), and this checkout's seconds per phase (apitester.engine.phases). ``--readings``: a third
run of this checkout with the readings asked for, after the pair (their cost on the same configs).

    .venv/bin/python benchmarks/perf_guard.py --compare A.jsonl B.jsonl

compares two such runs: the verdict fields, and the readings (stable, closer, RMSEs) of the configs both read.

CI does not run this (it times things); docs/measurements.md keeps its figures with the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apitester.coverage import collect_configs  # noqa: E402
from apitester.readings import input_bytes  # noqa: E402
from apitester.reports import reports_dir  # noqa: E402


def sample_configs(per_api: int, max_mib: int) -> list[str]:
    per = collect_configs([str(reports_dir() / "reports" / "ci_ce_cpu")], None, per_api, 0)
    return [c for configs in per.values() for c in configs if (input_bytes(c) or 0) <= max_mib << 20]


def start(tree: Path, sample: Path, jsonl: Path, readings: bool = False) -> tuple[subprocess.Popen, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "apitester", "coverage", str(sample), "--workers", "1", "--threads", "1",
               "--quiet", "--jsonl", str(jsonl)] + (["--readings"] if readings else [])
    return subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL), time.perf_counter()


def finish(proc: subprocess.Popen, started: float) -> float:
    if proc.wait() != 0:
        raise SystemExit(f"{proc.args} exited {proc.returncode}")
    return time.perf_counter() - started


def finish_both(pair: list[tuple[subprocess.Popen, float]]) -> list[float]:
    """Each process's own wall time: polled, so the one that ends first is not charged the other's remainder."""
    ended: dict[int, float] = {}
    while len(ended) < len(pair):
        for i, (proc, started) in enumerate(pair):
            if i not in ended and proc.poll() is not None:
                if proc.returncode != 0:
                    raise SystemExit(f"{proc.args} exited {proc.returncode}")
                ended[i] = time.perf_counter() - started
        time.sleep(0.05)
    return [ended[i] for i in range(len(pair))]


def load(path: Path) -> dict[str, dict]:
    return {row["config"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


VERDICT_FIELDS = ("status", "exact", "max_ulp")
READING_FIELDS = ("stable", "nondeterministic", "closer", "closer_code", "closer_output", "paddle_rmse", "torch_rmse")


def differences(base: dict[str, dict], head: dict[str, dict], names=VERDICT_FIELDS) -> list[str]:
    lines = []
    for config in sorted(base.keys() & head.keys()):
        b, h = base[config], head[config]
        fields = [f for f in names if f in b and b.get(f) != h.get(f)]
        if fields:
            lines.append(f"  {', '.join(f'{f} {b.get(f)} -> {h.get(f)}' for f in fields)}: {config[:140]}")
    return lines


def phase_profile(rows: dict[str, dict]) -> str:
    seconds: Counter = Counter()
    for row in rows.values():
        for name, value in (row.get("phases") or {}).items():
            seconds[name] += float(value)
    total = sum(seconds.values())
    return ", ".join(f"{name} {s:.1f} s ({100 * s / max(total, 1e-9):.0f} %)" for name, s in seconds.most_common())


def compare(first: Path, second: Path) -> int:
    """Two runs' JSON lines (coverage --jsonl) compared: the verdict fields, and the readings where both have them."""
    a, b = load(first), load(second)
    both = a.keys() & b.keys()
    verdicts = differences(a, b)
    read = {c for c in both if a[c].get("closer") is not None and b[c].get("closer") is not None}
    readings = differences({c: a[c] for c in read}, {c: b[c] for c in read}, READING_FIELDS)
    print(f"{len(both)} configs in both; status / exact / max_ulp differ on {len(verdicts)}")
    print("\n".join(verdicts[:40]))
    print(f"{len(read)} configs with a closer reading in both; stability / closer / RMSE differ on {len(readings)}")
    print("\n".join(readings[:40]))
    for name, rows in ((first, a), (second, b)):
        print(f"{name}: Σ seconds {sum(r['seconds'] for r in rows.values()):.1f}, Σ framework "
              f"{sum(r.get('framework_seconds') or 0 for r in rows.values()):.1f}, Σ readings "
              f"{sum(float(r.get('readings_seconds') or 0) for r in rows.values()):.1f}")
    return 1 if verdicts or readings else 0


def main() -> int:
    if sys.argv[1:2] == ["--compare"]:
        return compare(Path(sys.argv[2]), Path(sys.argv[3]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="288efb9", help="the commit to compare with (default 288efb9, the "
                        "engine before the exact rule's readings)")
    parser.add_argument("--sample", type=int, default=3, help="configs per API (default 3)")
    parser.add_argument("--max-input-mib", type=int, default=64)
    parser.add_argument("--readings", action="store_true", help="also time this checkout with --readings")
    parser.add_argument("--keep", type=Path, default=None, help="keep the sample and the JSON lines in this folder")
    args = parser.parse_args()

    configs = sample_configs(args.sample, args.max_input_mib)
    work = Path(tempfile.mkdtemp(prefix="perf-guard-"))
    out = args.keep or work
    out.mkdir(parents=True, exist_ok=True)
    sample = out / "sample.txt"
    sample.write_text("\n".join(configs) + "\n", encoding="utf-8")
    baseline = work / "baseline"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(baseline), args.baseline],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        print(f"{len(configs)} configs (at most {args.sample} per API, <= {args.max_input_mib} MiB of inputs), "
              f"{os.cpu_count()} cores; baseline {args.baseline} and this checkout side by side, one process each")
        pair = [start(baseline, sample, out / "baseline.jsonl"), start(REPO, sample, out / "head.jsonl")]
        base_s, head_s = finish_both(pair)
        base, head = load(out / "baseline.jsonl"), load(out / "head.jsonl")
        print(f"baseline {args.baseline}: {base_s:.1f} s; this checkout: {head_s:.1f} s; "
              f"ratio {head_s / base_s:.3f} (this checkout / baseline)")
        changed = differences(base, head)
        print(f"status / exact / max_ulp differing on {len(changed)} of {len(base.keys() & head.keys())} configs")
        print("\n".join(changed[:40]))
        print(f"this checkout, seconds per phase: {phase_profile(head)}")
        if args.readings:
            proc = start(REPO, sample, out / "readings.jsonl", readings=True)
            readings_s = finish(*proc)
            asked = load(out / "readings.jsonl")
            print(f"this checkout with --readings (alone): {readings_s:.1f} s; readings "
                  f"{sum(float(r.get('readings_seconds') or 0) for r in asked.values()):.1f} s of it; "
                  f"same status / exact / max_ulp as without: {len(differences(head, asked)) == 0}")
            print(f"  seconds per phase: {phase_profile(asked)}")
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
