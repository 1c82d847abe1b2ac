"""Input draws (issue 18): the time they add and the verdicts they change.

    python benchmarks/draws.py time CONFIGS.jsonl        # A/B in one process, back to back per config
    python benchmarks/draws.py changes BEFORE.jsonl AFTER.jsonl
    python benchmarks/draws.py formats [N]                # draw format 1 vs the current one, N report configs
    python benchmarks/draws.py float16                    # the float16 rounder vs numpy, every float32

``time`` reads the configs of a ``coverage --jsonl`` file (skipped_too_large / crash / timeout left
out: they never ran a draw) and runs each twice in this process, one math thread: the typical draw
alone (``draw="typical:0"``, exactly the single-draw engine's inputs and code path) and the whole
plan.  Running the two back to back per config keeps the machine's load out of the ratio.  A config
whose plan is one draw (inputs above EDGE_INPUT_ELEMENTS, random APIs) runs once and counts the same
seconds on both sides.  Prints Σ seconds of each, the ratio, and the draws judged per config.

``changes`` lists every config whose status differs between two ``coverage --jsonl`` files, grouped
by API and (before -> after), with the draw the new verdict reports.

``formats`` runs a seeded sample of N (default 150) CPU-report configs that format 2 draws differently (a
float32/float16/bfloat16 input of more than DRAW_CHUNK elements; at most 48 MiB of inputs) twice in this process:
the whole plan in draw format 1 and in the current format (``inputs.DRAW_FORMATS``), and lists every status that
differs -- what the format change does to the verdicts (the report file is read in place, never copied).

``float16`` rounds every one of the 2**32 float32 bit patterns to float16 with ``inputs.float16_rounder()`` (torch's
vectorised cast) and with numpy's cast, chunk by chunk, and counts the patterns whose bits differ (NaN: only
NaN-ness is compared; draws never hold one), with both casts' seconds.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter, defaultdict

NOT_RUN = ("skipped_too_large", "crash", "flaky_crash", "timeout")


def load(path: str) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        return {v["config"]: v for v in map(json.loads, filter(str.strip, fh))}


def time_main(path: str) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from apitester import inputs as inp
    from apitester.config import parse_config
    from apitester.engine.execute import frameworks, run_config
    from apitester.specs import get_spec

    frameworks()
    configs = [c for c, v in load(path).items() if v["status"] not in NOT_RUN]
    single = full = 0.0
    draws: Counter[int] = Counter()
    for i, config in enumerate(configs, 1):
        start = time.perf_counter()
        run_config(config, draw="typical:0")
        typical = time.perf_counter() - start
        call, spec = None, None
        try:
            call = parse_config(config)
            spec = get_spec(call.api)
        except Exception:  # a syntax error: one draw, as before
            pass
        one_draw = spec is None or spec.random or \
            len(inp.draw_plan(sum(t.numel for t in call.tensors()))) == 1
        if one_draw:
            plan, judged = typical, 1
        else:
            start = time.perf_counter()
            verdict = run_config(config)
            plan, judged = time.perf_counter() - start, max(len(verdict.draws), 1)
        single += typical
        full += plan
        draws[judged] += 1
        if i % 20 == 0:
            print(f"  {i}/{len(configs)}: typical {single:.1f} s, plan {full:.1f} s", file=sys.stderr, flush=True)
    print(f"configs: {len(configs)}; draws judged per config: "
          + ", ".join(f"{k}: {draws[k]}" for k in sorted(draws)))
    print(f"typical draw only: {single:.1f} s; whole plan: {full:.1f} s; ratio {full / max(single, 1e-9):.3f}")
    return 0


def changes_main(before_path: str, after_path: str) -> int:
    before, after = load(before_path), load(after_path)
    common = sorted(set(before) & set(after))
    groups: dict[tuple, list] = defaultdict(list)
    for config in common:
        b, a = before[config], after[config]
        if b["status"] != a["status"]:
            draw = a.get("draw") or {}
            label = f"{draw.get('kind')}:{draw.get('seed')}" if draw else "-"
            groups[(a.get("api") or b.get("api"), b["status"], a["status"], a.get("direction"), label)].append(config)
    print(f"configs: {len(common)} in both; status changed: {sum(len(v) for v in groups.values())}")
    for (api, old, new, direction, label), configs in sorted(groups.items()):
        print(f"  {api}: {old} -> {new}{' ' + direction if direction else ''} x{len(configs)} (draw {label})"
              f"  e.g. {configs[0][:150]}")
    return 0


def formats_main(n: int) -> int:
    import random
    from dataclasses import replace

    from apitester import inputs as inp
    from apitester.config import parse_config
    from apitester.engine.execute import frameworks, run_config
    from apitester.reports import reports_dir

    origin = reports_dir() / "reports/ci_ce_cpu/error_config.txt"
    kept = []
    for line in origin.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            call = parse_config(line.strip())
        except Exception:
            continue
        if inp.estimate_bytes(call) <= 48 << 20 and any(
                t.dtype in ("float32", "float16", "bfloat16") and t.numel > inp.DRAW_CHUNK for t in call.tensors()):
            kept.append(line.strip())
    random.Random(0).shuffle(kept)
    configs = kept[:n]
    frameworks()
    current_plan = inp.draw_plan
    counts: Counter = Counter()
    changed = []
    for config in configs:
        new = run_config(config)
        inp.draw_plan = lambda elements, seed=0: [replace(d, format=1) for d in current_plan(elements, seed)]
        try:
            old = run_config(config)
        finally:
            inp.draw_plan = current_plan
        counts[(old.status, new.status)] += 1
        if old.status != new.status:
            changed.append((config, old.status, new.status, new.message.splitlines()[0][:160] if new.message else ""))
    print(f"{len(configs)} configs of {len(kept)} in {origin} that format {inp.DRAW_FORMAT} draws differently "
          f"(seeded sample): status format 1 -> format {inp.DRAW_FORMAT}")
    for (old, new), k in sorted(counts.items()):
        print(f"  {old} -> {new}: {k}")
    for config, old, new, message in changed:
        print(f"  CHANGED {old} -> {new}: {config[:150]}  ({message})")
    return 0


def float16_main() -> int:
    import numpy as np

    from apitester import inputs as inp

    rounder = inp.float16_rounder()
    step = 1 << 24
    differ = 0
    seconds = {"numpy": 0.0, "rounder": 0.0}
    got = np.empty(step, np.float16)
    for start in range(0, 2**32, step):
        values = np.arange(start, start + step, dtype=np.uint64).astype(np.uint32).view(np.float32)
        begin = time.perf_counter()
        with np.errstate(over="ignore"):  # float32 above 65504 round to inf: what is compared
            want = values.astype(np.float16)
        middle = time.perf_counter()
        rounder(values, got)
        seconds["numpy"] += middle - begin
        seconds["rounder"] += time.perf_counter() - middle
        nan = np.isnan(values)
        differ += int(np.count_nonzero(np.isnan(got) != nan))
        differ += int(np.count_nonzero(got[~nan].view(np.uint16) != want[~nan].view(np.uint16)))
    print(f"2**32 float32 patterns rounded to float16: {differ} differ from numpy's bits; numpy "
          f"{seconds['numpy']:.1f} s, {rounder.__name__} {seconds['rounder']:.1f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["float16"]:
        sys.exit(float16_main())
    if len(sys.argv) == 3 and sys.argv[1] == "time":
        sys.exit(time_main(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "changes":
        sys.exit(changes_main(sys.argv[2], sys.argv[3]))
    if len(sys.argv) in (2, 3) and sys.argv[1] == "formats":
        sys.exit(formats_main(int(sys.argv[2]) if len(sys.argv) == 3 else 150))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
