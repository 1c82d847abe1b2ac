"""The tracking issue's own summary figures (看板信息), read from its text and stored as one Event.

The issue body ends its board with a two-row table, in the plain rendering (tab-separated, as in the seed)
or as markdown (as the community bot and `export_board` write it):

    任务方向	任务数量	提交作品 / 任务认领	提交率	完成	完成率
    精度问题修复	183	103 / 139	56.28%	86	46.99%

Those are the issue's figures, not the board's: "completed 86" is what the maintainers counted, and offline it
is the only completed count there is (the board cannot see PR states without GitHub). The import stores them
as an Event (kind `tracking_summary`, task none, source `seed`, source_ref FILE:LINE, the figures in `data`);
the same figures again record nothing. A summary line that cannot be read — a missing column, a figure that
is not a number, a rate that does not match its count — is reported as `FILE:LINE: why` and changes nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from ..models import Source
from ..selectors.board import tracking_summary_event
from ..vocab import EventKind
from .events import record_event

# Header cells as the issue names them (spaces around the slash vary between renderings).
COLUMNS = ("任务方向", "任务数量", "提交作品/任务认领", "提交率", "完成", "完成率")
_SEPARATOR_RE = re.compile(r"^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?\s*$")
_INT_RE = re.compile(r"\d{1,7}")
_PAIR_RE = re.compile(r"(\d{1,7})\s*/\s*(\d{1,7})")
_PERCENT_RE = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%")
# The bot prints round(x, 2): a rate may be off its count by half a hundredth, plus float noise.
RATE_TOLERANCE = 0.006


class SummaryError(ValueError):
    """A summary line that cannot be read: `line` is its 1-based line in the text."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line

    def format(self, source: str) -> str:
        return f"{source}:{self.line}: 看板信息 summary not imported: {self}"


@dataclass(frozen=True)
class TrackingSummary:
    line: int  # the values row's line in the text
    direction: str
    tasks: int
    submitted: int
    claimed: int
    submit_rate: str
    completed: int
    completed_rate: str

    def as_data(self) -> dict:
        return {"direction": self.direction, "tasks": self.tasks, "submitted": self.submitted, "claimed": self.claimed,
                "submit_rate": self.submit_rate, "completed": self.completed, "completed_rate": self.completed_rate}


def _cells(raw: str) -> list[str]:
    text = raw.strip()
    if text.startswith("|"):
        text = text[1:-1] if text.endswith("|") and len(text) > 1 else text[1:]
        return [cell.strip() for cell in text.split("|")]
    return [cell.strip() for cell in text.split("\t")]


def _header_key(cell: str) -> str:
    return re.sub(r"\s+", "", cell)


def parse_summary(text: str) -> TrackingSummary | None:
    """The summary figures of the issue text; None when it has no summary table; SummaryError when its line is
    malformed (no database access)."""
    lines = text.splitlines()
    for index, raw in enumerate(lines):
        if [_header_key(c) for c in _cells(raw)] == list(COLUMNS):
            return _values_row(lines, index)
    return None


def _values_row(lines: list[str], header_index: int) -> TrackingSummary:
    for index in range(header_index + 1, len(lines)):
        raw = lines[index]
        if not raw.strip() or _SEPARATOR_RE.match(raw):
            continue
        return _read_values(_cells(raw), index + 1)
    raise SummaryError(header_index + 1, "the header has no row of figures under it")


def _read_values(cells: list[str], line: int) -> TrackingSummary:
    if len(cells) != len(COLUMNS):
        raise SummaryError(line, f"expected {len(COLUMNS)} cells ({' | '.join(COLUMNS)}), got {len(cells)}")
    direction, tasks, pair, submit_rate, completed, completed_rate = cells

    def whole(name: str, cell: str) -> int:
        if not _INT_RE.fullmatch(cell):
            raise SummaryError(line, f"{name} {cell!r} is not a whole number")
        return int(cell)

    tasks_n, completed_n = whole("任务数量", tasks), whole("完成", completed)
    if not (match := _PAIR_RE.fullmatch(pair)):
        raise SummaryError(line, f"提交作品 / 任务认领 {pair!r} is not two whole numbers separated by /")
    submitted_n, claimed_n = int(match.group(1)), int(match.group(2))
    for name, n in (("提交作品", submitted_n), ("任务认领", claimed_n), ("完成", completed_n)):
        if n > tasks_n:
            raise SummaryError(line, f"{name} {n} is more than the {tasks_n} tasks")
    _check_rate(line, "提交率", submit_rate, submitted_n, tasks_n)
    _check_rate(line, "完成率", completed_rate, completed_n, tasks_n)
    return TrackingSummary(line=line, direction=direction, tasks=tasks_n, submitted=submitted_n, claimed=claimed_n,
                           submit_rate=submit_rate.replace(" ", ""), completed=completed_n,
                           completed_rate=completed_rate.replace(" ", ""))


def _check_rate(line: int, name: str, cell: str, part: int, total: int) -> None:
    if not (match := _PERCENT_RE.fullmatch(cell)):
        raise SummaryError(line, f"{name} {cell!r} is not a percentage")
    expected = part / total * 100 if total else 0.0
    if abs(float(match.group(1)) - expected) > RATE_TOLERANCE:
        raise SummaryError(line, f"{name} {cell} does not match {part} of {total} tasks ({expected:.2f}%)")


def import_summary(text: str, *, source: str, when=None) -> tuple[TrackingSummary | None, str]:
    """Store the text's summary figures: (the figures or None, an error `FILE:LINE: why` or "").

    Nothing is written when the text has none, when its line is malformed, or when the newest stored summary has the
    same figures."""
    try:
        summary = parse_summary(text)
    except SummaryError as error:
        return None, error.format(source)
    if summary is None:
        return None, ""
    latest = tracking_summary_event()
    if latest is None or latest.data != summary.as_data():
        with transaction.atomic():
            record_event(task=None, kind=EventKind.TRACKING_SUMMARY, source=Source.SEED,
                         source_ref=f"{source}:{summary.line}", data=summary.as_data(), when=when,
                         message=(f"{summary.tasks} tasks, {summary.submitted} / {summary.claimed} submitted / claimed, "
                                  f"{summary.completed} completed"))
    return summary, ""

