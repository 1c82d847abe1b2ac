"""``python -m apitester coverage``: how many report configs the engine runs to a verdict.

    python -m apitester coverage PATH... [--sample N] [--workers N] [--only-apis FILE_OR_LIST]
        [--timeout S] [--budget-gib G] [--jsonl OUT]

PATHs are config files or directories (every *.txt but error_api.txt); lines are deduped.
Configs run in worker processes that import paddle and torch once; a config that kills its
worker counts as ``crash``, one that runs past ``--timeout`` as ``timeout`` (the worker is
replaced and the run goes on).  Configs whose estimated memory exceeds the budget are not
run and count as ``skipped_too_large``.

Per API: configs, verdict (pass / accuracy_error / dtype_mismatch / shape_mismatch /
paddle_error / torch_error), unsupported (the engine cannot run it: no spec, arguments do
not bind, syntax), engine_error (an exception inside apitester), then the other counts and
the per-status counts.  The last line is exactly
``TOTAL configs=N verdict=M unsupported=U engine_error=E``; the line before it gives
``skipped_too_large``, ``crash`` and ``timeout``, so N = M + U + E + those three.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import sys
import time
from collections import Counter, defaultdict
from multiprocessing.connection import wait
from pathlib import Path

from .config import ConfigSyntaxError, api_name, parse_config
from .inputs import estimate_bytes
from .reports import TASK_NAME_ALIASES, iter_config_lines

VERDICT_STATUSES = ("pass", "accuracy_error", "dtype_mismatch", "shape_mismatch", "paddle_error", "torch_error",
                    "documented_difference", "torch_suspect")
OTHER_STATUSES = ("skipped_too_large", "crash", "timeout")

# A run holds the inputs on both sides plus gradients and float64 comparison copies:
# peak memory is taken as this multiple of the input bytes.
PEAK_FACTOR = 6



def category(verdict: dict) -> str:
    """verdict | unsupported | engine_error | skipped_too_large | crash | timeout."""
    status = verdict["status"]
    if status == "unsupported":
        return "engine_error" if verdict.get("engine_error") else "unsupported"
    if status in VERDICT_STATUSES:
        return "verdict"
    if status == "flaky_crash":
        return "crash"
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


# ---------------------------------------------------------------- workers


def _worker_main(conn, options: dict) -> None:
    # Whatever paddle/torch print (e.g. Paddle's fatal-signal report) goes to stderr, not
    # into the coverage table on stdout.
    sys.stdout.flush()
    os.dup2(2, 1)
    threads = str(options.get("threads", 1))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = threads
    from .execute import frameworks, run_config

    _, torch = frameworks()
    torch.set_num_threads(int(threads))
    conn.send(("ready", os.getpid()))
    while True:
        try:
            config = conn.recv()
        except EOFError:
            return
        if config is None:
            return
        verdict = run_config(config, device=options["device"], atol=options["atol"],
                             rtol=options["rtol"], seed=options["seed"])
        conn.send(("verdict", verdict.to_dict()))


class _Worker:
    def __init__(self, ctx, options: dict):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, options), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.config: str | None = None
        self.started = 0.0

    def send(self, config: str) -> None:
        self.config = config
        self.started = time.monotonic()
        self.conn.send(config)

    def kill(self) -> None:
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)  # only this worker, which we started
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.kill()


def _exit_reason(proc) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            return f"worker killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with code {code}"


def run_many(configs: list[str], *, workers: int = 2, timeout: float = 120.0, device: str = "cpu",
             atol: float = 1e-2, rtol: float = 1e-2, seed: int = 0, threads: int = 1,
             progress=None):
    """Run configs in isolated workers; yields verdict dicts (in completion order)."""
    options = {"device": device, "atol": atol, "rtol": rtol, "seed": seed, "threads": threads}
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    pending = list(reversed(configs))
    pool = [_Worker(ctx, options) for _ in range(max(1, min(workers, len(configs))))] if configs else []
    done = 0
    try:
        while pending or any(w.config is not None for w in pool):
            for w in pool:
                if w.ready and w.config is None and pending:
                    w.send(pending.pop())
            now = time.monotonic()
            busy = [w for w in pool if w.config is not None]
            deadlines = [w.started + timeout - now for w in busy]
            wait_for = max(0.05, min(deadlines)) if deadlines else 1.0
            ready = wait([w.conn for w in pool], timeout=wait_for)
            for i, w in enumerate(pool):
                result = None
                if w.conn in ready:
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(5)
                        if w.config is not None:
                            result = _synthetic(w.config, "crash", _exit_reason(w.proc), time.monotonic() - w.started)
                        else:
                            raise RuntimeError(f"coverage worker failed to start: {_exit_reason(w.proc)}")
                        w.conn.close()
                        pool[i] = _Worker(ctx, options)
                    else:
                        if kind == "ready":
                            w.ready = True
                        else:
                            result = payload
                            w.config = None
                elif w.config is not None and time.monotonic() - w.started > timeout:
                    result = _synthetic(w.config, "timeout", f"no verdict within {timeout:g} s", timeout)
                    w.kill()
                    pool[i] = _Worker(ctx, options)
                if result is not None:
                    done += 1
                    if progress:
                        progress(done, len(configs))
                    yield result
    finally:
        for w in pool:
            w.stop()


def _synthetic(config: str, status: str, message: str, seconds: float) -> dict:
    return {"status": status, "config": config, "api": api_name(config), "message": message,
            "seconds": seconds, "engine_error": False, "direction": None}


# ---------------------------------------------------------------- main


def coverage_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m apitester coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="config files or directories")
    p.add_argument("--sample", type=int, default=None, help="at most N configs per API (deterministic sample)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--only-apis", "--api-filter", dest="only_apis", default=None,
                   help="restrict to these APIs: a file (one per line) or a comma-separated list")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per config (default 120)")
    p.add_argument("--budget-gib", type=float, default=2.0,
                   help=f"skip configs whose estimated peak ({PEAK_FACTOR}x input bytes) exceeds this")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="math threads per worker")
    p.add_argument("--jsonl", default=None, help="also write every verdict as JSON lines to this file")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)

    for path in args.paths:
        if not Path(path).exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return 2
    only = read_api_list(args.only_apis) if args.only_apis else None
    per_api = collect_configs(args.paths, only, args.sample, args.seed)

    budget = args.budget_gib * 2**30
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    results: dict[str, list[dict]] = defaultdict(list)
    to_run: list[str] = []
    for api, configs in per_api.items():
        for config in configs:
            try:
                call = parse_config(config)
            except ConfigSyntaxError as exc:
                results[api].append({"status": "unsupported", "config": config, "api": api,
                                     "engine_error": False, "message": f"config syntax error: {exc}"})
                continue
            need = estimate_bytes(call) * PEAK_FACTOR
            if need > budget:
                results[api].append(_synthetic(config, "skipped_too_large",
                                               f"estimated peak {need / 2**30:.1f} GiB > budget {args.budget_gib:g} GiB", 0.0))
                continue
            to_run.append(config)

    start = time.monotonic()

    def progress(done, total):
        if not args.quiet and (done % 50 == 0 or done == total):
            rate = done / max(time.monotonic() - start, 1e-9)
            print(f"  {done}/{total} configs ({rate:.1f}/s)", file=sys.stderr, flush=True)

    if out:
        for verdicts in results.values():
            for v in verdicts:
                out.write(json.dumps(v) + "\n")
    try:
        for verdict in run_many(to_run, workers=args.workers, timeout=args.timeout, device=args.device,
                                atol=args.atol, rtol=args.rtol, seed=args.seed, threads=args.threads,
                                progress=progress):
            results[verdict.get("api") or api_name(verdict["config"])].append(verdict)
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
        status_text = " ".join(f"{s}={statuses[s]}" for s in sorted(statuses))
        print(f"{api} configs={len(verdicts)} verdict={cats['verdict']} unsupported={cats['unsupported']} "
              f"engine_error={cats['engine_error']} skipped_too_large={cats['skipped_too_large']} "
              f"crash={cats['crash']} timeout={cats['timeout']} | {status_text}")
        gaps = [v for v in verdicts if category(v) in ("unsupported", "engine_error", "crash", "timeout")]
        for v in gaps[:3]:  # a few examples per API; --jsonl has them all
            if True:
                print(f"    {v['status']}{' (engine error)' if v.get('engine_error') else ''}: "
                      f"{v.get('message', '')[:200]} <- {v['config'][:160]}")
    print(f"OTHER skipped_too_large={totals['skipped_too_large']} crash={totals['crash']} timeout={totals['timeout']} "
          f"seconds={time.monotonic() - start:.1f}")
    print(f"TOTAL configs={totals['configs']} verdict={totals['verdict']} "
          f"unsupported={totals['unsupported']} engine_error={totals['engine_error']}")
    return 0
