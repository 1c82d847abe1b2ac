"""``python -m apitester adaptations [--markdown]``: every adapted spec, from the registry.

docs/verdicts.md's table ("Every adapted spec", between its ``adaptations-table`` markers) is this
command's ``--markdown`` output; tests/engine/test_verdict_layers.py checks that they are equal.
"""

from __future__ import annotations

import argparse

from .specs import engine_specs
from .specs.base import SILENT_KINDS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table() -> str:
    """The table of visible (result-changing) adaptations, then a line counting the silent and plain specs."""
    specs = dict(sorted(engine_specs().items()))
    lines = ["| API (aliases) | kind | strict layer | reason |", "|---|---|---|---|"]
    silent = plain = 0
    for api, spec in specs.items():
        visible = spec.visible_adaptations
        if not visible:
            if any(a.kind in SILENT_KINDS for a in spec.adaptations):
                silent += 1
            else:
                plain += 1
            continue
        name = f"{api} ({', '.join(spec.aliases)})" if spec.aliases else api
        strict = ("separate (strict reference given)" if spec.has_strict_reference
                  else "= adapted (no plain Torch comparison)")
        for a in visible:
            link = f" [link]({a.link})" if a.link else ""
            lines.append(f"| `{name}` | {a.kind} | {strict} | {_cell(a.reason)}{link} |")
    lines.append("")
    lines.append(f"{silent} further specs declare only a silent argument mapping (its reason says which Paddle "
                 f"argument maps to which Torch one), {plain} are plain calls.")
    return "\n".join(lines)


def plain_text() -> str:
    rows = []
    for api, spec in sorted(engine_specs().items()):
        for a in spec.adaptations:
            rows.append(f"{api}\t{a.kind}\t{a.reason}")
    return "\n".join(rows)


def adaptations_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m apitester adaptations",
                                description="List every spec's declared adaptations (from the registry).")
    p.add_argument("--markdown", action="store_true",
                   help="the table of result-changing adaptations in docs/verdicts.md")
    args = p.parse_args(argv)
    print(markdown_table() if args.markdown else plain_text())
    return 0
