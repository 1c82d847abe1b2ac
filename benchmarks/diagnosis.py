"""Diagnosis (issue 19) over the CPU tasks' strictly failing configs: oracle readings, shrink figures,
and how many shrunk configs' own repro scripts reproduce the same failure.

    python benchmarks/diagnosis.py [--sample N | --limit N | --per-api N] [--max-trials 200] [--max-seconds 60]
                                   [--max-input-bytes 16777216] [--seed-file PATH] [--configs FILE]

Configs: reports/ci_ce_cpu/error_config.txt under apitester.reports.reports_dir()
($PADDLEAPITEST_REPORTS, else ../shared/paddleapitest), restricted to the CPU tasks of the board seed.
Each is diagnosed in this process (apitester.diagnosis.diagnose.diagnose_config); a config whose strict layer
does not fail on this Paddle is counted and left out.  Each shrunk config's repro script is written to
a temporary file and run with this python; "reproduced" = exit status 1 and the script's reported
(status, direction, output) equal to the diagnosis' failure.
"""
from __future__ import annotations

import argparse
import faulthandler
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
from apitester.diagnosis.diagnose import diagnose_config, group_failures  # noqa: E402
from apitester.inputs import estimate_bytes  # noqa: E402
from apitester.reports import discover_report_files, iter_file_configs, reports_dir  # noqa: E402
from runner import cpu_task_apis, default_seed  # noqa: E402  (the board seed's CPU tasks, one definition)
from apitester.vocab import Reading  # noqa: E402


def cpu_task_configs(seed_file: Path) -> list[str]:
    apis = cpu_task_apis(seed_file)
    newest = [f for f in discover_report_files(reports_dir()) if f.rel == "reports/ci_ce_cpu/error_config.txt"]
    return list(dict.fromkeys(line.config for f in newest for line in iter_file_configs(f) if line.api in apis))


def same_failure(diagnosis: dict, returncode: int, stdout: str) -> bool:
    """Did the script exit 1 reporting the diagnosis' failure (status, direction, output)?"""
    try:
        outcome = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return False
    failure = diagnosis["failure"]
    status = "paddle_error" if failure["status"].startswith("paddle_error") else failure["status"]
    return returncode == 1 and outcome == {"status": status, "direction": failure["direction"],
                                           "output": failure["output"] if status != "paddle_error" else None}


def reproduces(diagnosis: dict) -> bool:
    """The script run on its own: a new interpreter, as a contributor would run it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "repro.py"
        path.write_text(diagnosis["repro"]["script"])
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    return same_failure(diagnosis, proc.returncode, proc.stdout)


# One interpreter that runs script after script (runpy, a fresh __main__ each), so paddle and torch are
# imported once instead of once per script (~5 s each): for a measurement over a thousand scripts.
_SCRIPT_RUNNER = r"""
import contextlib, io, json, runpy, sys
for path in map(str.strip, sys.stdin):
    out, code = io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        code, out = 2, io.StringIO(repr(exc))
    print(json.dumps({"code": code, "stdout": out.getvalue()[-2000:]}), flush=True)
"""


class ScriptRunner:
    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-c", _SCRIPT_RUNNER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.count = 0

    def reproduces(self, diagnosis: dict) -> bool:
        self.count += 1
        path = Path(self.tmp.name) / f"repro_{self.count}.py"
        path.write_text(diagnosis["repro"]["script"])
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:  # the interpreter died (a crash in one script): that script did not reproduce
            self.__init__()
            return False
        answer = json.loads(line)
        return same_failure(diagnosis, answer["code"], answer["stdout"])


def _per_api_sample(configs: list[str], n: int) -> list[str]:
    by_api: dict[str, list[str]] = {}
    for config in configs:
        by_api.setdefault(config.split("(", 1)[0], []).append(config)
    rng = random.Random(0)
    return [c for api in sorted(by_api) for c in (by_api[api] if len(by_api[api]) <= n else rng.sample(by_api[api], n))]


def _small(config: str, limit: int) -> bool:
    try:
        return estimate_bytes(parse_config(config)) <= limit
    except Exception:
        return True  # a syntax error: diagnose_config says so


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sample", type=int, help="a random sample (seeded, 0) of N configs")
    p.add_argument("--limit", type=int, help="the first N configs")
    p.add_argument("--per-api", type=int,
                   help="a random sample (seeded, 0) of at most N configs per API, so every task is represented")
    p.add_argument("--max-trials", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--max-input-bytes", type=int, default=1 << 24, help="skip configs with more input bytes")
    p.add_argument("--seed-file", type=Path, default=None)
    p.add_argument("--jsonl", type=Path, default=None, help="write every diagnosis here")
    p.add_argument("--configs", type=Path, default=None,
                   help="diagnose the configs of this file (one per line; e.g. every_config.py strict-failures)")
    p.add_argument("--scripts-in-one-process", action="store_true",
                   help="run the repro scripts one after another in one interpreter (see ScriptRunner)")
    p.add_argument("--report", type=Path, default=None, help="only print the report of this --jsonl file")
    p.add_argument("--config-timeout", type=float, default=120.0,
                   help="end this process when one config's diagnosis takes longer (a kernel that hangs: Paddle "
                        "3.3.1's warp-rnnt on a shrink candidate); a restart records it like a crash (--jsonl)")
    args = p.parse_args(argv)
    if args.report:
        lines = [json.loads(x) for x in args.report.read_text(encoding="utf-8").splitlines() if x.strip()]
        report([d for d in lines if d.get("diagnosed")], Counter(_not_diagnosed(d) for d in lines if not d.get("diagnosed")))
        return 0
    if args.configs:
        configs = list(dict.fromkeys(filter(None, args.configs.read_text(encoding="utf-8").splitlines())))
    else:
        configs = cpu_task_configs(args.seed_file or default_seed())
    total = len(configs)
    large = [c for c in configs if not _small(c, args.max_input_bytes)]
    configs = [c for c in configs if c not in set(large)]
    if args.per_api:
        configs = _per_api_sample(configs, args.per_api)
    if args.sample:
        configs = random.Random(0).sample(configs, min(args.sample, len(configs)))
    if args.limit:
        configs = configs[: args.limit]
    print(f"{total} CPU-task configs; {len(large)} over {args.max_input_bytes} input bytes left out; "
          f"diagnosing {len(configs)}", flush=True)
    diagnoses, not_failing = [], Counter()
    done = set()
    if args.jsonl and args.jsonl.exists():  # resume: configs already diagnosed in this file are kept
        done = {json.loads(x).get("config") for x in args.jsonl.read_text(encoding="utf-8").splitlines() if x.strip()}
        configs = [c for c in configs if c not in done]
        print(f"{len(done)} already in {args.jsonl}; diagnosing the other {len(configs)}", flush=True)
    out = open(args.jsonl, "a", encoding="utf-8") if args.jsonl else None
    inflight = args.jsonl.with_suffix(".inflight") if args.jsonl else None
    if inflight and inflight.exists() and out:  # the last run died inside this config (SIGILL, OOM): say so
        died = inflight.read_text(encoding="utf-8").strip()
        if died in configs:
            out.write(json.dumps({"config": died, "diagnosed": False,
                                  "reason": "crash: the diagnosing process died inside this config (or went over "
                                            "--config-timeout)"}) + "\n")
            out.flush()
            configs.remove(died)
    runner = ScriptRunner() if args.scripts_in_one_process else None
    for i, config in enumerate(configs, 1):
        if inflight:
            inflight.write_text(config, encoding="utf-8")
        # a C++ kernel that hangs never returns to the interpreter: only a watchdog thread can end the process
        faulthandler.dump_traceback_later(args.config_timeout, exit=True)
        d = diagnose_config(config, max_trials=args.max_trials, max_seconds=args.max_seconds)
        d.setdefault("config", config)
        if d.get("diagnosed"):
            d["reproduced"] = runner.reproduces(d) if runner else reproduces(d)
            diagnoses.append(d)
        else:
            not_failing[_not_diagnosed(d)] += 1
        faulthandler.cancel_dump_traceback_later()
        if out:
            out.write(json.dumps(d) + "\n")
            out.flush()  # a later config may kill this process (SIGILL, SIGFPE inside a kernel)
        print(f"  {i}/{len(configs)} {d.get('seconds', 0):.1f} s "
              f"{(d.get('failure') or {}).get('reading', '-')} {config[:100]}", file=sys.stderr, flush=True)
    report(diagnoses, not_failing)
    return 0


def _not_diagnosed(d: dict) -> str:
    return (d.get("verdict") or {}).get("strict_status", (d.get("reason") or "?")[:40])


NAMED_SIDES = frozenset({Reading.PADDLE_OFF, Reading.TORCH_OFF, Reading.BOTH_OFF, Reading.WITHIN_ROUNDING})
VALUE_FAILURE = "accuracy_error"


def named_side_share(diagnoses: list[dict]) -> str:
    """Issue 34's two figures: of the strict value failures (the shrunk failure's status accuracy_error), how many
    name a side; of every other strict failure (an error, a dtype, a shape), how many carry a convention or an
    error reading.  Then the readings by API."""
    value = [d for d in diagnoses if d["failure"]["status"] == VALUE_FAILURE]
    other = [d for d in diagnoses if d["failure"]["status"] != VALUE_FAILURE]
    named = sum(d["reading"]["reading"] in NAMED_SIDES for d in value)
    convention = sum(d["reading"]["reading"] == Reading.CONVENTION for d in value)
    read = sum(d["reading"]["reading"] != Reading.NO_ORACLE for d in other)
    lines = [f"value failures (accuracy_error): {len(value)}; a named side {named} "
             f"({100 * named / max(len(value), 1):.1f} %), a convention {convention}, "
             f"no_oracle {sum(d['reading']['reading'] == Reading.NO_ORACLE for d in value)}",
             f"other strict failures: {len(other)}; a convention or error reading {read} "
             f"({100 * read / max(len(other), 1):.1f} %)", "readings by API:"]
    by_api: dict[str, Counter] = {}
    for d in diagnoses:
        reading = d["reading"]["reading"]
        if reading == Reading.NO_ORACLE:
            reading = f"no_oracle:{d['reading'].get('no_oracle')}"
        by_api.setdefault(d["api"], Counter())[reading] += 1
    for api in sorted(by_api):
        lines.append(f"  {api}: " + ", ".join(f"{k} {v}" for k, v in by_api[api].most_common()))
    return "\n".join(lines)


def report(diagnoses: list[dict], not_failing: Counter) -> None:
    print(f"strictly failing, diagnosed: {len(diagnoses)}; not diagnosed: "
          + ", ".join(f"{k} {v}" for k, v in not_failing.most_common()))
    if not diagnoses:
        return
    readings = Counter(d["failure"]["reading"] for d in diagnoses)
    print("readings (failing output): " + ", ".join(f"{k} {v}" for k, v in readings.most_common()))
    print(named_side_share(diagnoses))
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
