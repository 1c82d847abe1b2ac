"""Locate and read PaddleAPITest report files (third-party data, read at run time)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

_REPO = Path(__file__).resolve().parents[1]


def reports_dir() -> Path:
    """$PADDLEAPITEST_REPORTS, else the first existing default location."""
    env = os.environ.get("PADDLEAPITEST_REPORTS")
    if env:
        return Path(env)
    for candidate in (_REPO.parent / "shared" / "paddleapitest", Path("/work/shared/paddleapitest")):
        if candidate.is_dir():
            return candidate
    return _REPO.parent / "shared" / "paddleapitest"


def config_files(root: Path | str) -> list[Path]:
    """Every config file under root (a file is returned as itself); error_api.txt excluded."""
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.txt") if p.name != "error_api.txt")


def iter_config_lines(paths) -> Iterator[tuple[Path, int, str]]:
    """(file, 1-based line number, stripped line) for every non-empty line."""
    for root in paths:
        for path in config_files(root):
            with open(path, encoding="utf-8") as fh:
                for lineno, raw in enumerate(fh, 1):
                    line = raw.strip()
                    if line:
                        yield path, lineno, line
