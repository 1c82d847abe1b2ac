"""The 2026 exact rule over a whole-set run: how many configs are exact, within tolerance or failing.

    python benchmarks/exact_rule.py RUN.jsonl [--by api|task] [--top 20]

RUN.jsonl is benchmarks/every_config.py's output (one engine verdict per line, with ``exact``, ``max_ulp`` and
``rule`` over the strict layer: apitester/compare.py, docs/verdicts.md "The exact rule"). Prints the counts of
``rule`` overall and per API, the configs with no value comparison (``rule`` null: errors, unsupported, skipped),
and the APIs with the most non-exact configs, with the median and max ULP distance — and, where the verdicts
carry them (``closer``, ``stable``), who is closer to the float64 oracle and how many configs were not stable.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

RULES = ("exact", "within_tolerance", "fails")


def load(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def summary(rows: list[dict]) -> dict:
    by_api: dict[str, Counter] = defaultdict(Counter)
    ulps: dict[str, list[int]] = defaultdict(list)
    closer: dict[str, Counter] = defaultdict(Counter)
    unstable: Counter = Counter()
    for row in rows:
        api = row["api"]
        rule = row.get("rule") or "no_comparison"
        by_api[api][rule] += 1
        if rule in ("within_tolerance", "fails") and isinstance(row.get("max_ulp"), int):
            ulps[api].append(row["max_ulp"])
        if row.get("closer"):
            closer[api][row["closer"]] += 1
        if row.get("stable") is False:
            unstable[api] += 1
    total = Counter()
    for counts in by_api.values():
        total.update(counts)
    return {"total": total, "by_api": by_api, "ulps": ulps, "closer": closer, "unstable": unstable}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    rows = load(args.run)
    s = summary(rows)
    total = s["total"]
    print(f"{len(rows)} configs: " + ", ".join(f"{k} {total[k]}" for k in (*RULES, "no_comparison")))
    non_exact = {api: c["within_tolerance"] + c["fails"] for api, c in s["by_api"].items()}
    print(f"\nthe {args.top} APIs with the most non-exact configs (exact / within tolerance / failing; ULP median, max):")
    for api in sorted(non_exact, key=lambda a: (-non_exact[a], a))[:args.top]:
        c, u = s["by_api"][api], s["ulps"].get(api) or [0]
        extra = ""
        if s["closer"].get(api):
            extra += "; closer: " + ", ".join(f"{k} {n}" for k, n in s["closer"][api].most_common())
        if s["unstable"].get(api):
            extra += f"; not stable {s['unstable'][api]}"
        print(f"  {api}: {c['exact']} / {c['within_tolerance']} / {c['fails']} (no comparison {c['no_comparison']}); "
              f"ULP {int(statistics.median(u))}, {max(u)}{extra}")
    print(f"\nAPIs: {len(s['by_api'])}; every config exact: "
          f"{sum(1 for c in s['by_api'].values() if c['exact'] and not (c['within_tolerance'] + c['fails']))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
