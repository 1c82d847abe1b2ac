"""Parse every config line of the PaddleAPITest reports and time it.

Usage: python benchmarks/parse_configs.py [REPORTS_DIR]
Prints: lines, distinct, failures, round-trip mismatches, seconds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.config import ConfigSyntaxError, format_call, parse_config  # noqa: E402
from apitester.reports import config_files, reports_dir  # noqa: E402


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else reports_dir()
    start = time.perf_counter()
    lines = 0
    distinct: set[str] = set()
    failures = 0
    mismatches = 0
    for path in config_files(root):
        with open(path, encoding="utf-8") as fh:
            for lineno, raw in enumerate(fh, 1):
                line = raw.strip()
                if not line:
                    continue
                lines += 1
                if line in distinct:
                    continue
                distinct.add(line)
                try:
                    call = parse_config(line)
                except ConfigSyntaxError as exc:
                    failures += 1
                    print(f"{path}:{lineno}:{exc.column}: {exc}")
                    continue
                if format_call(call) != line:
                    mismatches += 1
                    print(f"{path}:{lineno}: round trip differs: {format_call(call)}")
    seconds = time.perf_counter() - start
    print(f"lines={lines} distinct={len(distinct)} failures={failures} "
          f"roundtrip_mismatches={mismatches} seconds={seconds:.2f}")
    return 0 if failures == 0 and mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
