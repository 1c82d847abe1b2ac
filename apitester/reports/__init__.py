"""Locate and read PaddleAPITest report files (third-party data, read at run time; no Django here).

Layout (see the data's README.md):
  reports/ci_ce_cpu/error_config.txt                   newest CPU report (its date: the newest history version)
  reports/ci_ce_cpu/DATE[/SUB]/error_config.txt        older CPU runs (SUB such as 6_accuracy_amp, amp_cpu_error)
  reports/ci_ce_gpu/test_history/DATE[_N][/CATEGORY]/error_config.txt   GPU runs (error, dtype_diff_error, …)
  history/ci_ce_cpu|ci_ce_gpu/DATE_SHA.txt             every committed version of the main error_config.txt

`iter_report_configs(root)` yields one `ConfigLine` per config line of every such file; lines that don't
look like `api(...)` are reported with file:line and skipped. Files are read one at a time and split on
line ends, so a file without a final newline never glues its last line to the next file's first.
"""
from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ..vocab import Device

_REPO = Path(__file__).resolve().parents[2]  # the checkout (this file is apitester/reports/__init__.py)

KERNEL_DIRS = {"ci_ce_cpu": "CPU", "ci_ce_gpu": "GPU"}

# Board task names that differ from the API name PaddleAPITest traced in its configs. The README
# names the first two; Tensor.matmul's configs (task 140) are traced as __matmul__; __setitem__ has no
# task but is named the same way.
TASK_NAME_ALIASES = {
    "paddle.Tensor.mul": "paddle.Tensor.__mul__",
    "paddle.Tensor.getitem": "paddle.Tensor.__getitem__",
    "paddle.Tensor.matmul": "paddle.Tensor.__matmul__",
    "paddle.Tensor.setitem": "paddle.Tensor.__setitem__",
}
CONFIG_NAME_TO_TASK = {config: task for task, config in TASK_NAME_ALIASES.items()}

_API_RE = re.compile(r"([A-Za-z_][\w.]*)\(")
_DATE_DIR_RE = re.compile(r"^(\d{8})(?:_\d+)?$")
_HISTORY_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})_([0-9a-f]+)\.txt$")
_README_NEWEST_RE = re.compile(r"error_config\.txt`?\s+is the newest\s*\((\d{4}-\d{2}-\d{2})\)")


# Where the reports are looked for when $PADDLEAPITEST_REPORTS is unset: the nearest folder
# shared/paddleapitest beside the repository or beside one of its parent folders (../shared for a checkout
# next to the shared folder, ../../shared for a worktree one level deeper). No path of one machine: set the
# variable wherever the reports live elsewhere.
SHARED_REPORTS = Path("shared") / "paddleapitest"


def reports_dir(start: Path | None = None) -> Path:
    """$PADDLEAPITEST_REPORTS, else the nearest SHARED_REPORTS above ``start`` (the repository by default; the
    board's settings read this too: one definition); the one beside the repository when none exists."""
    env = os.environ.get("PADDLEAPITEST_REPORTS")
    if env:
        return Path(env)
    start = (start or _REPO).resolve()
    candidates = [parent / SHARED_REPORTS for parent in start.parents]
    return next((c for c in candidates if c.is_dir()), candidates[0])


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


def normalize_category(folder: str) -> str:
    """Folder names of the report layout → a short category: accuracy, amp, dtype_diff, amp_dtype_diff, …"""
    name = re.sub(r"^\d+_", "", folder.lower()).replace("dff", "diff")
    words = [w for w in name.split("_") if w not in {"error", "", *Device}]
    if not words or words == ["accuracy"]:
        return "accuracy"
    if "amp" in words:
        rest = [w for w in words if w not in {"amp", "accuracy"}]
        return "_".join(["amp"] + rest)
    return "_".join(w for w in words if w != "accuracy") or "accuracy"


@dataclass(frozen=True)
class ReportFile:
    path: Path
    rel: str  # relative to the reports root, with forward slashes
    kernel: str  # CPU | GPU
    date: dt.date | None
    category: str
    kind: str  # "report" (reports/…) or "history" (history/…: a committed version of the main report)


@dataclass(frozen=True)
class ConfigLine:
    api: str
    config: str
    file: str  # relative path
    line: int
    date: dt.date | None
    category: str
    kernel: str
    kind: str


@dataclass
class MalformedLine:
    file: str
    line: int
    message: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message} — {self.text[:100]!r}"


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if "-" in text else dt.datetime.strptime(text, "%Y%m%d").date()
    except ValueError:
        return None


def _history_files(root: Path, kernel_dir: str) -> list[tuple[dt.date, Path]]:
    folder = root / "history" / kernel_dir
    found = []
    if folder.is_dir():
        for path in folder.iterdir():
            match = _HISTORY_NAME_RE.match(path.name)
            if match and _date(match.group(1)):
                found.append((_date(match.group(1)), path))
    return sorted(found)


def _newest_report_date(root: Path, kernel_dir: str) -> dt.date | None:
    """The top-level error_config.txt has no date of its own: it is the newest history version."""
    history = _history_files(root, kernel_dir)
    if history:
        return history[-1][0]
    readme = root / "README.md"
    if readme.is_file():
        match = _README_NEWEST_RE.search(readme.read_text(encoding="utf-8", errors="replace"))
        if match:
            return _date(match.group(1))
    return None


def discover_report_files(root: Path | str) -> list[ReportFile]:
    """Every config file of the layout with its kernel, date, category and kind, oldest first."""
    root = Path(root)
    files: list[ReportFile] = []

    def add(path: Path, kernel: str, date, category: str, kind: str) -> None:
        files.append(ReportFile(path, path.relative_to(root).as_posix(), kernel, date, category, kind))

    for kernel_dir, kernel in KERNEL_DIRS.items():
        base = root / "reports" / kernel_dir
        if base.is_dir():
            top = base / "error_config.txt"
            if top.is_file():
                add(top, kernel, _newest_report_date(root, kernel_dir), "accuracy", "report")
            dated_parent = base / "test_history" if (base / "test_history").is_dir() else base
            for folder in sorted(p for p in dated_parent.iterdir() if p.is_dir()):
                match = _DATE_DIR_RE.match(folder.name)
                if not match:
                    continue
                date = _date(match.group(1))
                if (folder / "error_config.txt").is_file():
                    add(folder / "error_config.txt", kernel, date, "accuracy", "report")
                for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
                    if (sub / "error_config.txt").is_file():
                        add(sub / "error_config.txt", kernel, date, normalize_category(sub.name), "report")
        for date, path in _history_files(root, kernel_dir):
            add(path, kernel, date, "accuracy", "history")
    files.sort(key=lambda f: (f.kernel, f.date or dt.date.min, f.kind == "report", f.rel))
    return files


_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"' + r"|'(?:[^'\\\n]|\\.)*'")
_BRACKET_RE = re.compile(r"[()\[\]{}\"']")


def check_config_line(text: str) -> tuple[str | None, str]:
    """A light shape check: `api(` … `)` with balanced brackets outside strings. Returns (api, error)."""
    match = _API_RE.match(text)
    if not match:
        return None, "does not start with an API call `name(`"
    if not text.endswith(")"):
        return None, "does not end with `)`"
    # Blank out string literals (same length, so columns stay right), then walk the brackets only.
    body = _STRING_RE.sub(lambda m: " " * len(m.group(0)), text)
    depth = 0
    for bracket in _BRACKET_RE.finditer(body, match.end() - 1):
        char, column = bracket.group(0), bracket.start()
        if char in "\"'":
            return None, f"unterminated string at column {column + 1}"
        if char in "([{":
            depth += 1
            continue
        depth -= 1
        if depth < 0:
            return None, f"unbalanced `{char}` at column {column + 1}"
        if depth == 0 and column != len(text) - 1:
            return None, f"text after the call's closing `)` at column {column + 2} (two configs glued together?)"
    if depth:
        return None, "unbalanced brackets"
    return match.group(1), ""


def iter_file_configs(report: ReportFile, on_error: Callable[[MalformedLine], None] | None = None) -> Iterator[ConfigLine]:
    with open(report.path, encoding="utf-8", errors="strict", newline="") as fh:
        text = fh.read()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        api, error = check_config_line(line)
        if error:
            if on_error:
                on_error(MalformedLine(report.rel, lineno, error, line))
            continue
        yield ConfigLine(api, line, report.rel, lineno, report.date, report.category, report.kernel, report.kind)


def iter_report_configs(root: Path | str, on_error: Callable[[MalformedLine], None] | None = None) -> Iterator[ConfigLine]:
    """(api, config, file, line, date, category, kernel, kind) for every config line of the layout."""
    for report in discover_report_files(root):
        yield from iter_file_configs(report, on_error)


@dataclass
class ConfigTimeline:
    """Everything the reports say about one (kernel, config)."""

    api: str
    config: str
    kernel: str
    origins: list[dict] = field(default_factory=list)  # [{"file", "line", "date", "category", "kind"}], oldest first
    first_seen: dt.date | None = None
    last_seen: dt.date | None = None
    in_latest_report: bool = False
    gone_since: dt.date | None = None

    @property
    def newest_origin(self) -> dict:
        return self.origins[-1]


@dataclass
class ReportIndex:
    configs: dict[tuple[str, str], ConfigTimeline]  # (kernel, config) → timeline
    files: list[ReportFile]
    malformed: list[MalformedLine]
    latest_date: dict[str, dt.date | None]  # kernel → date of its newest report


def build_index(root: Path | str) -> ReportIndex:
    """Read every file once and work out each config's origins, first/last seen and whether it is gone.

    The newest report of a kernel is every report file with the newest date (for GPU that is all the
    categories of the newest test_history folder). A config absent from it is "gone from the report":
    `gone_since` is the next history version after it was last seen (accuracy configs), else the next
    dated run of the same category, else the newest report's date.
    """
    files = discover_report_files(root)
    malformed: list[MalformedLine] = []
    configs: dict[tuple[str, str], ConfigTimeline] = {}
    for report in files:
        for item in iter_file_configs(report, malformed.append):
            key = (item.kernel, item.config)
            timeline = configs.get(key)
            if timeline is None:
                timeline = configs[key] = ConfigTimeline(item.api, item.config, item.kernel)
            timeline.origins.append({
                "file": item.file, "line": item.line, "date": item.date.isoformat() if item.date else None,
                "category": item.category, "kind": item.kind,
            })
            if item.date:
                timeline.first_seen = min(filter(None, (timeline.first_seen, item.date)))
                timeline.last_seen = max(filter(None, (timeline.last_seen, item.date)))
    latest_date: dict[str, dt.date | None] = {}
    snapshot_dates: dict[tuple[str, str], list[dt.date]] = {}
    latest_files: dict[str, set[str]] = {}
    history_dates: dict[str, list[dt.date]] = {}
    for report in files:
        if report.date is None:
            continue
        if report.kind == "report" and (latest_date.get(report.kernel) is None or report.date > latest_date[report.kernel]):
            latest_date[report.kernel] = report.date
        snapshot_dates.setdefault((report.kernel, report.category), []).append(report.date)
        if report.kind == "history":
            history_dates.setdefault(report.kernel, []).append(report.date)
    for report in files:
        if report.date is not None and report.date == latest_date.get(report.kernel):
            latest_files.setdefault(report.kernel, set()).add(report.rel)
    for timeline in configs.values():
        newest = latest_files.get(timeline.kernel, set())
        timeline.in_latest_report = any(o["file"] in newest for o in timeline.origins)
        if timeline.in_latest_report or timeline.last_seen is None:
            continue
        category = timeline.newest_origin["category"]
        # history/ is the committed timeline of the main report: its next version is where an accuracy
        # config vanished. Other categories (amp, dtype_diff, …) only have their own dated runs.
        later = [d for d in history_dates.get(timeline.kernel, []) if d > timeline.last_seen] if category == "accuracy" else []
        later = later or [d for d in snapshot_dates.get((timeline.kernel, category), []) if d > timeline.last_seen]
        timeline.gone_since = min(later) if later else latest_date.get(timeline.kernel)
    return ReportIndex(configs, files, malformed, latest_date)
