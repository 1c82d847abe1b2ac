"""Read what PaddleAPITest itself saw per failing config: the `error_log.log` beside each report file.

Django-free (third-party data, read at run time). A log is a sequence of blocks; a block opens with
  `DATE TIME [GPU <id> <pid>] test begin: <config>`             (every log but one)
  `[Worker N] Processing Task K: <config>`                       (test_history/20250526_2)
and holds at most one result line:
  `[accuracy error] [backward ]<config>` then the assertion text of numpy or torch.testing,
  `[paddle error] <config>` then Paddle's exception,
  `[not compare] …` (grads_diff_error: gradients PaddleAPITest did not compare).
Warnings and C++ tracebacks may sit anywhere in a block; they are not results.

The assertion text comes in these variants (all present in the shared logs; see the tests):
  torch.testing   `Mismatched elements: a / b (p%)`, `Greatest absolute|relative difference: x at index …`
  numpy ≥ 2       `Mismatched elements: a / b (p%)`, `Max absolute|relative difference among violations: x`
  numpy < 2       `Mismatched elements: a / b (p%)`, `Max absolute|relative difference: x`
  shapes          `(shapes (1, 1, 1), (1, 0, 2) mismatch)` (numpy) or
                  `The values for attribute 'shape' do not match: torch.Size([…]) != torch.Size([…]).`
  dtypes          `The values for attribute 'dtype' do not match: torch.int64 != torch.int32.`
  special values  `x and y nan location mismatch:` / `+inf location mismatch:` (numpy)
  scalars         `Scalars are not close!` … `Absolute difference: x (up to …)`, `Relative difference: y` (torch)
  Paddle raised   `(PreconditionNotMet) …` as the first line: an exception while comparing (kind paddle_error)
  outputs         `[output type diff error2],  4 3` (Paddle and Torch return different numbers of outputs)
An accuracy block matching none of them, a result line naming another config than its block's
`test begin`, or a result line without a config is *unparseable*: reported with file and line, never
guessed. A `test begin` without any result line (the run died there, or passed) is counted, not a failure.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import MalformedLine, discover_report_files

LOG_NAME = "error_log.log"
MESSAGE_CHARS = 500


class Kind:
    """What a reported failure is: the board shows these words."""

    VALUES = "values"  # elements differ beyond tolerance (mismatched/total, max abs/rel known)
    SHAPE = "shape"
    DTYPE = "dtype"
    SPECIAL_VALUES = "special_values"  # nan / ±inf in different places
    OUTPUT_STRUCTURE = "output_structure"  # Paddle and Torch return different numbers/types of outputs
    PADDLE_ERROR = "paddle_error"  # Paddle raised: no numbers, the exception is the message
    NOT_COMPARED = "not_compared"  # PaddleAPITest could not compare (grads_diff_error)

    ALL = (VALUES, SHAPE, DTYPE, SPECIAL_VALUES, OUTPUT_STRUCTURE, PADDLE_ERROR, NOT_COMPARED)


_BEGIN_RE = re.compile(r"^\d{4}-\d{2}-\d{2} [\d:.]+ (?:GPU \d+ \d+ )?test begin: (?P<config>.*)$")
_WORKER_BEGIN_RE = re.compile(r"^\[Worker \d+\] Processing Task \d+: (?P<config>.*)$")
_WORKER_END_RE = re.compile(r"^\[Worker \d+\] Completed Task \d+")
_RESULT_RE = re.compile(r"^\[(?P<marker>accuracy error|paddle error|not compare)\](?P<rest>.*)$")
_NUMBER = r"([-+]?(?:inf|nan|\d+(?:\.\d*)?(?:e[-+]?\d+)?))"
_MISMATCHED_RE = re.compile(r"^Mismatched elements: (\d+) / (\d+)")
_SCALAR_RE = re.compile(r"^Scalars are not close!")
_ABS_RES = (
    re.compile(r"^Greatest absolute difference: " + _NUMBER),
    re.compile(r"^Absolute difference: " + _NUMBER),  # torch.testing, one scalar
    re.compile(r"^Max absolute difference(?: among violations)?: " + _NUMBER),
)
_REL_RES = (
    re.compile(r"^Greatest relative difference: " + _NUMBER),
    re.compile(r"^Relative difference: " + _NUMBER),
    re.compile(r"^Max relative difference(?: among violations)?: " + _NUMBER),
)
_SHAPE_RES = (
    re.compile(r"^\(shapes \(.*\), \(.*\) mismatch\)"),
    re.compile(r"^The values for attribute 'shape' do not match"),
)
_DTYPE_RE = re.compile(r"^The values for attribute 'dtype' do not match")
_SPECIAL_RE = re.compile(r"(?:nan|[-+]?inf) location mismatch")
# Paddle's own exception format, `(PreconditionNotMet) …`: Paddle raised while its outputs were compared.
_PADDLE_EXCEPTION_RE = re.compile(r"^\((?:[A-Z][A-Za-z]+)\) ")
_OUTPUT_STRUCTURE_RE = re.compile(r"^\[output type diff error\d*\]")


@dataclass(frozen=True)
class ReportedFailure:
    """One failing config as one report's log describes it."""

    config: str
    kind: str
    direction: str  # forward | backward | "" (the log does not say: Paddle errors, not compared)
    mismatched: int | None
    total: int | None
    max_abs: float | None
    max_rel: float | None
    message: str  # the line that says what differs, or Paddle's exception (at most MESSAGE_CHARS)
    file: str  # the log, relative to the reports root
    line: int  # the result line's number
    date: dt.date | None  # the report's date (its folder's, as the config file beside it)
    device: str  # CPU | GPU: which kernel the report tested (ci_ce_cpu / ci_ce_gpu)
    category: str


# An unparseable block: file, line of its result line, why (`message`) and the result line (`text`).
UnparseableBlock = MalformedLine


@dataclass
class LogReadResult:
    failures: list[ReportedFailure] = field(default_factory=list)
    unparseable: list[UnparseableBlock] = field(default_factory=list)
    logs: int = 0
    blocks: int = 0  # result blocks read (failures + unparseable)
    begun_without_result: int = 0


@dataclass(frozen=True)
class LogSource:
    """Where a log sits and what its report is (the config file beside it gives date and category)."""

    path: Path
    rel: str
    device: str
    date: dt.date | None
    category: str


def _float(text: str) -> float:
    return float(text) if text not in {"inf", "+inf", "-inf", "nan"} else float(text.replace("+", ""))


def _first_match(patterns, lines: list[str]):
    for text in lines:
        for pattern in patterns:
            match = pattern.search(text) if pattern is _SPECIAL_RE else pattern.match(text)
            if match:
                return match, text
    return None, None


def _accuracy_fields(body: list[str]) -> dict | str:
    """The kind and numbers of an `[accuracy error]` body, or why none of the known variants matched."""
    lines = [line.strip() for line in body]
    mismatched, _ = _first_match([_MISMATCHED_RE], lines)
    max_abs, _ = _first_match(_ABS_RES, lines)
    max_rel, _ = _first_match(_REL_RES, lines)
    if mismatched or max_abs:
        scalar, _ = _first_match([_SCALAR_RE], lines)
        counts = (int(mismatched.group(1)), int(mismatched.group(2))) if mismatched else (1, 1) if scalar else (None, None)
        headline = mismatched.string if mismatched else max_abs.string
        return {
            "kind": Kind.VALUES, "mismatched": counts[0], "total": counts[1],
            "max_abs": _float(max_abs.group(1)) if max_abs else None,
            "max_rel": _float(max_rel.group(1)) if max_rel else None,
            "message": headline,
        }
    for kind, patterns in ((Kind.SHAPE, _SHAPE_RES), (Kind.DTYPE, [_DTYPE_RE]), (Kind.SPECIAL_VALUES, [_SPECIAL_RE]),
                           (Kind.OUTPUT_STRUCTURE, [_OUTPUT_STRUCTURE_RE])):
        match, text = _first_match(patterns, lines)
        if match:
            return {"kind": kind, "mismatched": None, "total": None, "max_abs": None, "max_rel": None, "message": text}
    if lines and _PADDLE_EXCEPTION_RE.match(next((t for t in lines if t), "")):
        return _paddle_error_fields(body)
    return "accuracy error without a known difference line (mismatched elements, shapes, dtypes or nan/inf locations)"


def _paddle_error_fields(body: list[str]) -> dict | str:
    text = " ".join(line.strip() for line in body if line.strip())
    if not text:
        return "paddle error without an exception message"
    return {"kind": Kind.PADDLE_ERROR, "mismatched": None, "total": None, "max_abs": None, "max_rel": None, "message": text}


def _split_result_line(marker: str, rest: str) -> tuple[str, str]:
    """(direction, config) of a result line's remainder; `[not compare]` carries no config."""
    rest = rest.strip()
    if marker != "accuracy error":
        return "", rest
    if rest.startswith("backward"):
        return "backward", rest[len("backward"):].strip()
    return "forward", rest


class _Block:
    """A result line and the lines after it, until the next block."""

    def __init__(self, line: int, marker: str, rest: str, begun: str | None):
        self.line, self.marker, self.begun = line, marker, begun
        self.direction, self.config = _split_result_line(marker, rest)
        self.body: list[str] = []


def _finish(block: _Block, source: LogSource, out: LogReadResult) -> None:
    out.blocks += 1
    config = block.config if block.marker != "not compare" else (block.begun or "")
    text = f"[{block.marker}] {block.config}"
    if not config:
        out.unparseable.append(UnparseableBlock(source.rel, block.line, "result line without a config", text))
        return
    if block.begun is not None and block.marker != "not compare" and config != block.begun:
        out.unparseable.append(UnparseableBlock(
            source.rel, block.line, "result line names another config than its block's `test begin`", text))
        return
    if block.marker == "accuracy error":
        fields = _accuracy_fields(block.body)
    elif block.marker == "paddle error":
        fields = _paddle_error_fields(block.body)
    else:
        fields = {"kind": Kind.NOT_COMPARED, "mismatched": None, "total": None, "max_abs": None, "max_rel": None,
                  "message": block.config or "not compared"}
    if isinstance(fields, str):
        out.unparseable.append(UnparseableBlock(source.rel, block.line, fields, text))
        return
    fields["message"] = fields["message"][:MESSAGE_CHARS]
    out.failures.append(ReportedFailure(
        config=config, direction=block.direction, file=source.rel, line=block.line,
        date=source.date, device=source.device, category=source.category, **fields))


def read_log_lines(lines: Iterator[str] | list[str], source: LogSource, out: LogReadResult | None = None) -> LogReadResult:
    """Parse one log's lines into `out` (a new result if None)."""
    out = out if out is not None else LogReadResult()
    out.logs += 1
    begun: str | None = None  # the open block's `test begin` config, until its result line
    block: _Block | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        begin = _BEGIN_RE.match(line) or _WORKER_BEGIN_RE.match(line)
        result = _RESULT_RE.match(line)
        opened_by = begun
        if begin or result or _WORKER_END_RE.match(line):
            if block is not None:
                _finish(block, source, out)
                block = None
            elif begun is not None and (begin or _WORKER_END_RE.match(line)):
                out.begun_without_result += 1
            begun = None
        if begin:
            begun = begin.group("config").strip()
        elif result:
            block = _Block(number, result.group("marker"), result.group("rest"), opened_by)
        elif block is not None:
            block.body.append(line)
    if block is not None:
        _finish(block, source, out)
    elif begun is not None:
        out.begun_without_result += 1
    return out


def discover_logs(root: Path | str) -> list[LogSource]:
    """Every `error_log.log` sitting beside a report file (reports/…), with that report's date and category."""
    root = Path(root)
    sources = []
    for report in discover_report_files(root):
        log = report.path.with_name(LOG_NAME)
        if report.kind == "report" and log.is_file():
            sources.append(LogSource(log, log.relative_to(root).as_posix(), report.kernel, report.date, report.category))
    return sources


def read_logs(root: Path | str) -> LogReadResult:
    """Every failure every log under root reports, and every block that could not be read."""
    out = LogReadResult()
    for source in discover_logs(root):
        with open(source.path, encoding="utf-8", errors="replace") as fh:
            read_log_lines(fh, source, out)
    return out


def is_finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
