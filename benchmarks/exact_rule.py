"""The 2026 exact rule over a whole-set run: how many configs are exact, within tolerance or failing.

    python benchmarks/exact_rule.py RUN.jsonl [--top 20] [--markdown TITLE]

RUN.jsonl is benchmarks/every_config.py's output (one engine verdict per line, with ``exact``, ``max_ulp`` and
``rule`` over the strict layer: apitester/engine/compare.py, docs/verdicts.md "The exact rule"). Prints the counts of
``rule`` overall and per API, the configs with no value comparison (``rule`` null: errors, unsupported, skipped),
and the APIs with the most non-exact configs, with the median and max ULP distance — and, where the verdicts
carry them (``closer``, ``stable``), who is closer to the float64 oracle and how many configs were not stable;
the readings' share of the run (``readings_seconds`` inside each verdict's ``seconds``: the run's time with the
readings / without them, one run on the same configs); and one row per CPU task of the board seed (its configs'
exact / within tolerance / failing).  ``--markdown TITLE`` prints the same as a section of
docs/measurements/exact-rule.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner import cpu_tasks, default_seed  # noqa: E402  (the board seed's tasks, one definition)

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


def readings_ratio(rows: list[dict]) -> tuple[float, float, float]:
    """(seconds with the readings, of them readings, ratio with / without) over the run's verdicts."""
    total = sum(float(r.get("seconds") or 0) for r in rows)
    readings = sum(float(r.get("readings_seconds") or 0) for r in rows)
    return total, readings, total / max(total - readings, 1e-9)


def lines_of(rows: list[dict], top: int, seed: Path, markdown: bool) -> list[str]:
    s = summary(rows)
    total = s["total"]
    out = []
    bullet = "- " if markdown else ""
    out.append(f"{bullet}{len(rows)} configs: " + ", ".join(f"{k} {total[k]}" for k in (*RULES, "no_comparison")))
    closer = Counter()
    for counts in s["closer"].values():
        closer.update(counts)
    non_exact = sum(total[k] for k in ("within_tolerance", "fails"))
    out.append(f"{bullet}closer (the float64 oracle's reading of the worst output) of the {non_exact} not exact: "
               f"read {sum(closer.values())} — " + ", ".join(f"{k} {n}" for k, n in closer.most_common())
               + f"; {non_exact - sum(closer.values())} not read (the quota per API x dtypes group, or over the bound)")
    unstable = [r for r in rows if r.get("stable") is False]
    out.append(f"{bullet}not stable (a side's result changed between two calls on identical inputs): {len(unstable)}"
               + "".join(f"; `{r['config'][:110]}`" for r in unstable[:5]))
    with_readings, readings, ratio = readings_ratio(rows)
    out.append(f"{bullet}time: {with_readings:.0f} s of verdict time, {readings:.0f} s of it readings: "
               f"with / without the readings = {ratio:.3f}")
    per_api = {api: c["within_tolerance"] + c["fails"] for api, c in s["by_api"].items()}
    out.append("")
    out.append(f"The {top} APIs with the most non-exact configs (exact / within tolerance / failing; ULP median, max; "
               "closer):")
    out.append("")
    if markdown:
        out += ["| API | exact | within tolerance | failing | ULP median | ULP max | closer |", "|---|---|---|---|---|---|---|"]
    for api in sorted(per_api, key=lambda a: (-per_api[a], a))[:top]:
        c, u = s["by_api"][api], s["ulps"].get(api) or [0]
        near = ", ".join(f"{k} {n}" for k, n in s["closer"][api].most_common()) if s["closer"].get(api) else "—"
        if s["unstable"].get(api):
            near += f"; not stable {s['unstable'][api]}"
        if markdown:
            out.append(f"| `{api}` | {c['exact']} | {c['within_tolerance']} | {c['fails']} | "
                       f"{int(statistics.median(u))} | {max(u)} | {near} |")
        else:
            out.append(f"  {api}: {c['exact']} / {c['within_tolerance']} / {c['fails']} (no comparison "
                       f"{c['no_comparison']}); ULP {int(statistics.median(u))}, {max(u)}; closer: {near}")
    exact_apis = sum(1 for c in s["by_api"].values() if c["exact"] and not (c["within_tolerance"] + c["fails"]))
    out += ["", f"APIs: {len(s['by_api'])}; every config exact: {exact_apis}", ""]
    out.append("Per CPU task (No., API: exact / within tolerance / failing / no comparison):")
    out.append("")
    if markdown:
        out += ["| No. | API | exact | within tolerance | failing | no comparison |", "|---|---|---|---|---|---|"]
    for number, _, api in cpu_tasks(seed):
        c = s["by_api"].get(api, Counter())
        if markdown:
            out.append(f"| {number} | `{api}` | {c['exact']} | {c['within_tolerance']} | {c['fails']} | "
                       f"{c['no_comparison']} |")
        else:
            out.append(f"  No.{number} {api}: {c['exact']} / {c['within_tolerance']} / {c['fails']} / {c['no_comparison']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--markdown", metavar="TITLE", help="print a markdown section with this title")
    parser.add_argument("--seed-file", type=Path, default=None)
    args = parser.parse_args()
    rows = load(args.run)
    lines = lines_of(rows, args.top, args.seed_file or default_seed(), bool(args.markdown))
    if args.markdown:
        lines = [f"## {args.markdown}", ""] + lines
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
