"""Does a change move the JSON a diagnosis or a verdict prints?  (issue #42: the readings typed, no key or value moved)

    python benchmarks/readings_json_diff.py sample --apis paddle.kron,paddle.std > configs.txt
    python benchmarks/readings_json_diff.py run --tree CHECKOUT --configs configs.txt --out DIR [--python PY] [--tag T]
    python benchmarks/readings_json_diff.py compare BEFORE_DIR AFTER_DIR

``sample`` prints, for each API named, the first (sorted) config of the CPU report files (read at run time under
``apitester.reports.reports_dir()``, never copied) whose estimated inputs are under ``--max-bytes``.

``run`` runs, with ``--python`` (default: this interpreter) and ``apitester`` imported from ``--tree`` (a checkout,
e.g. a ``git archive`` of the commit before): ``python -m apitester --api_config_file=F --readings --json`` into
``DIR/readings_T.jsonl``, and the diagnose command's own ``main(["diagnose", CONFIG, "--json", ...])`` for every
config in one process (a shrink bounded by trials, not seconds, so that both sides shrink alike) into
``DIR/diagnose_T.jsonl``.

``compare`` reads every ``*.jsonl`` of both folders line by line and sets the wall-clock fields aside (``seconds``,
``readings_seconds``, ``framework_seconds``, ``phases``; they are at every depth): each line is counted equal in keys
and values, and byte-identical (``json.dumps`` of both, key order included); each difference is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WALL_CLOCK = frozenset({"seconds", "readings_seconds", "framework_seconds", "phases"})
DIAGNOSE = """
import contextlib, io, sys
from apitester.cli import main
out = open(sys.argv[2], "w")
for config in [line.strip() for line in open(sys.argv[1]) if line.strip()]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(["diagnose", config, "--json", "--max-trials", sys.argv[3], "--max-seconds", "100000"])
    out.write(buffer.getvalue().strip() + "\\n")
    out.flush()
"""


def sample(apis: list[str], max_bytes: int) -> list[str]:
    sys.path.insert(0, str(REPO))
    from apitester.config import parse_config
    from apitester.inputs import estimate_bytes
    from apitester.reports import discover_report_files, iter_file_configs, reports_dir

    found: dict[str, set[str]] = {api: set() for api in apis}
    for report in discover_report_files(reports_dir()):
        if "cpu" not in str(report.path) or "error_config" not in str(report.path):
            continue
        for line in iter_file_configs(report):
            try:
                call = parse_config(line.config)
            except Exception:
                continue
            if call.api in found and estimate_bytes(call) < max_bytes:
                found[call.api].add(line.config)
    return [sorted(configs)[0] for configs in found.values() if configs]


def run(tree: Path, configs: Path, out: Path, python: str, tag: str, max_trials: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(out / f"readings_{tag}.jsonl", "w") as sink:
        subprocess.run([python, "-m", "apitester", f"--api_config_file={configs}", "--readings", "--json"],
                       cwd=tree, env=env, stdout=sink, stderr=subprocess.DEVNULL, check=False)
    subprocess.run([python, "-c", DIAGNOSE, str(configs), str(out / f"diagnose_{tag}.jsonl"), str(max_trials)],
                   cwd=tree, env=env, stderr=subprocess.DEVNULL, check=False)


def without_wall_clock(value):
    if isinstance(value, dict):
        return {k: without_wall_clock(v) for k, v in value.items() if k not in WALL_CLOCK}
    if isinstance(value, list):
        return [without_wall_clock(v) for v in value]
    return value


def compare(before: Path, after: Path) -> tuple[int, int, int]:
    total = equal = identical = 0
    for path in sorted(before.glob("*.jsonl")):
        old = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        new = [json.loads(line) for line in (after / path.name).read_text().splitlines() if line.strip()]
        if len(old) != len(new):
            print(f"{path.name}: {len(old)} lines before, {len(new)} after")
        for a, b in zip(old, new):
            total += 1
            a, b = without_wall_clock(a), without_wall_clock(b)
            if a != b:
                print(f"DIFFERS {path.name}: {str(a.get('config', ''))[:80]}")
                for key in sorted(set(a) | set(b)):
                    if a.get(key) != b.get(key):
                        print(f"    {key}: {json.dumps(a.get(key))[:300]} -> {json.dumps(b.get(key))[:300]}")
                continue
            equal += 1
            identical += json.dumps(a) == json.dumps(b)
    print(f"{total} lines: {equal} equal in keys and values, {identical} byte-identical (key order too)")
    return total, equal, identical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sample")
    p.add_argument("--apis", required=True, help="comma-separated API names")
    p.add_argument("--max-bytes", type=int, default=20_000)
    p = sub.add_parser("run")
    p.add_argument("--tree", type=Path, required=True)
    p.add_argument("--configs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--tag", default="331")
    p.add_argument("--max-trials", type=int, default=40)
    p = sub.add_parser("compare")
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "sample":
        print("\n".join(sample(args.apis.split(","), args.max_bytes)))
    elif args.command == "run":
        run(args.tree.resolve(), args.configs.resolve(), args.out.resolve(), args.python, args.tag, args.max_trials)
    else:
        total, equal, _ = compare(args.before, args.after)
        return 0 if total == equal else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
