"""Verdict counts before/after the two-layer verdicts (issue 11), from `coverage --jsonl` files.

    python -m apitester coverage DIR [--sample N] --workers 1 --jsonl before.jsonl   # on the old engine
    python -m apitester coverage DIR [--sample N] --workers 1 --jsonl after.jsonl    # on this one
    python benchmarks/verdict_layers.py before.jsonl after.jsonl

Prints per-status counts: before (the old single-layer status), after-strict (Paddle vs the plain
Torch call), after-adapted (after the spec's adaptations; = strict where a spec has none) and
after-final (the status the board shows), then every config whose status changed, grouped by
API and (before -> after), with the adaptation kinds involved.
"""
from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict


def load(path: str) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        return {v["config"]: v for v in map(json.loads, filter(str.strip, fh))}


def layers(v: dict) -> tuple[str, str]:
    strict = (v.get("strict") or {}).get("status") or v["status"]
    adapted = (v.get("adapted") or {}).get("status") or strict
    return strict, adapted


def main(before_path: str, after_path: str) -> int:
    before, after = load(before_path), load(after_path)
    common = sorted(set(before) & set(after))
    print(f"configs: {len(common)} in both files ({len(before)} before, {len(after)} after)")
    counts = {"before": Counter(), "after-strict": Counter(), "after-adapted": Counter(), "after-final": Counter()}
    changes: dict[tuple, list] = defaultdict(list)
    for config in common:
        b, a = before[config], after[config]
        strict, adapted = layers(a)
        counts["before"][b["status"]] += 1
        counts["after-strict"][strict] += 1
        counts["after-adapted"][adapted] += 1
        counts["after-final"][a["status"]] += 1
        if b["status"] != a["status"]:
            kinds = ",".join(sorted({x["kind"] for x in a.get("adaptations") or []})) or "-"
            changes[(a.get("api") or b.get("api"), b["status"], a["status"], kinds)].append(config)
    statuses = sorted(set().union(*counts.values()))
    print(f"{'status':<24}" + "".join(f"{name:>15}" for name in counts))
    for status in statuses:
        print(f"{status:<24}" + "".join(f"{counts[name][status]:>15}" for name in counts))
    print(f"\nclass changes: {sum(len(v) for v in changes.values())} configs")
    for (api, old, new, kinds), configs in sorted(changes.items()):
        print(f"  {api}: {old} -> {new} x{len(configs)} [adaptations: {kinds}]  e.g. {configs[0][:140]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
