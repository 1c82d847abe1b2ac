"""Reads of the 2026 exact rule (issue #35; docs/verdicts.md#the-exact-rule): per task and release "exact on a of n
configs" and "exact from release X", and the alignment worklist — one row per API × dtype with its configs exact /
within tolerance / failing, their ULP distances, who is closer to float64 and what to do about it.

"Exact from" is "fixed in" (selectors.releases.fixed_in) read over the exact rule instead of the 1e-2 one: the same
per-release grid (release_grids, one reader), each verdict read as a pass when exact and as a failure when not, and
the cells a bisecting matrix left unrun inferred by the same rule (bisection.infer) over that reading.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, field

from django.db.models import Q
from django.utils.translation import gettext as _

from apitester.builds import version_key
from apitester.config import api_name

from .. import bisection
from ..models import ConfigResult, Task
from ..vocab import Advice, Decision, ExactKind, FixedInKind, Reading, Rule, Side, Status, lane_of, rule_of
from .releases import ReleaseGrid, fixed_in, release_grids

# ----------------------------------------------------------------------------- per task: exact on a of n, exact from


def _as_status(exact: bool) -> str:
    """A verdict's exact reading as fixed_in reads a status: exact passes, not exact fails."""
    return Status.PASS if exact else Status.ACCURACY_ERROR


def exact_statuses(grid: ReleaseGrid) -> tuple[dict, dict]:
    """({config: {release: status}} of the run cells with an exact reading, the same of the cells inferred between
    them): fixed_in's arguments under the exact rule."""
    run = {c: {r: _as_status(cell.exact) for r, cell in row.items() if not cell.inferred and cell.exact is not None}
           for c, row in grid.cells.items()}
    inferred = {}
    for config, row in run.items():
        found = bisection.infer(grid.releases, {r: bisection.outcome(s) for r, s in row.items()})
        inferred[config] = {r: row[src] for r, src in found.items()}
    return run, inferred


@dataclass
class ExactAnswer:
    releases: list[str]                 # releases with an exact reading, oldest first
    counts: dict[str, list[int]]        # release -> [exact, with a reading] (run cells)
    latest: str = ""
    exact_latest: int = 0
    judged_latest: int = 0
    exact_from: str = ""                # the first release from which every config is exact ("" when none)
    before: str = ""                    # the release before exact_from
    every_release: bool = False         # every config exact on every release tested
    not_run: list[str] = field(default_factory=list)  # inferred releases (bisection)

    @property
    def kind(self) -> ExactKind:
        if self.judged_latest and self.exact_latest == self.judged_latest:
            return ExactKind.ALL
        return ExactKind.PARTLY if self.exact_latest else ExactKind.NONE

    @property
    def per_release(self) -> list[tuple[str, int, int]]:
        """(release, exact, with a reading), newest first."""
        return [(r, *self.counts[r]) for r in reversed(self.releases)]

    @property
    def short(self) -> str:
        return _("exact %(a)d/%(n)d") % {"a": self.exact_latest, "n": self.judged_latest}

    @property
    def text(self) -> str:
        text = _("exact on %(a)d of %(n)d configs on Paddle %(r)s") % {
            "a": self.exact_latest, "n": self.judged_latest, "r": self.latest}
        if self.exact_from:
            text += "; " + _("exact from release %(r)s (not on %(b)s)") % {"r": self.exact_from, "b": self.before}
        elif self.every_release and len(self.releases) > 1:
            text += "; " + _("exact on every release tested (%(rs)s)") % {"rs": ", ".join(self.releases)}
        return text

    def as_dict(self) -> dict:
        return {**asdict(self), "kind": self.kind.value, "text": self.text}


def exact_answer(grid: ReleaseGrid) -> ExactAnswer | None:
    """The task's exact-rule answer from its release grid; None when no verdict has an exact reading."""
    run, inferred = exact_statuses(grid)
    releases = sorted({r for row in run.values() for r in row}, key=version_key)
    if not releases:
        return None
    counts = {r: [sum(1 for row in run.values() if row.get(r) == Status.PASS),
                  sum(1 for row in run.values() if r in row)] for r in releases}
    answer = fixed_in(run, inferred)
    latest = releases[-1]
    return ExactAnswer(
        releases=releases, counts=counts, latest=latest, exact_latest=counts[latest][0],
        judged_latest=counts[latest][1],
        exact_from=answer.release if answer.kind == FixedInKind.FIXED else "",
        before=answer.before if answer.kind == FixedInKind.FIXED else "",
        every_release=answer.kind == FixedInKind.PASSING, not_run=answer.not_run)


def exact_answers(grids: dict[int, ReleaseGrid]) -> dict[int, ExactAnswer]:
    """task id -> its ExactAnswer, for every task of these grids (release_grids) with an exact reading."""
    answers = {task_id: exact_answer(grid) for task_id, grid in grids.items()}
    return {task_id: answer for task_id, answer in answers.items() if answer is not None}


def exact_by_task(task_ids=None) -> dict[int, ExactAnswer]:
    """task id -> its ExactAnswer, for every task (of these) with an exact reading (one grid read)."""
    return exact_answers(release_grids(task_ids))


def exact_kinds() -> list[tuple[str, str]]:
    """The board's ?exact= choices with their labels."""
    return [(ExactKind.ALL.value, _("every config exact")), (ExactKind.PARTLY.value, _("some configs exact")),
            (ExactKind.NONE.value, _("no config exact"))]


def task_exact_summary(task: Task, grid: ReleaseGrid | None = None) -> ExactAnswer | None:
    """`grid`: the task's ReleaseGrid when the caller read it (releases.task_releases_panel's "grid")."""
    if grid is not None:
        return exact_answers({task.id: grid}).get(task.id)
    return exact_by_task([task.id]).get(task.id)


# ----------------------------------------------------------------------------- the alignment worklist

_DTYPE = re.compile(r'"(bfloat16|float16|float32|float64|complex64|complex128|'
                    r'bool|int8|int16|int32|int64|uint8|uint16)"')
FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64", "complex64", "complex128")


def config_dtype(config: str) -> str:
    """The dtype a config is grouped by: its first floating tensor's (else its first tensor's, else "-")."""
    found = _DTYPE.findall(config)
    floating = [d for d in found if d in FLOAT_DTYPES]
    return (floating or found or ["-"])[0]


ROW_COLUMNS = ("id", "failing_config_id", "draw", "failing_config__config", "task__number", "task__kernel", "run__lane",
               "paddle_version", "run__paddle_version", "status", "strict_status", "exact", "max_ulp", "stable",
               "nondeterministic", "closer", "closer_code", "closer_output", "closer_skipped", "paddle_rmse",
               "torch_rmse", "run_id")


READING_COLUMNS = ("stable", "nondeterministic", "closer", "closer_code", "closer_output", "closer_skipped",
                   "paddle_rmse", "torch_rmse")


def alignment_releases() -> list[str]:
    """Releases with an exact reading, newest first."""
    judged = ConfigResult.objects.filter(exact__isnull=False, run__torch="")  # the project's Torch only (drift apart)
    found = set(judged.values_list("paddle_version", flat=True).distinct())
    found |= set(judged.filter(paddle_version="")
                 .values_list("run__paddle_version", flat=True).distinct())
    return sorted((r for r in found if r), key=version_key, reverse=True)


def newest_results(release: str) -> list[dict]:
    """The newest verdict of each config on ``release`` (its task's own lane), as plain dicts."""
    rows = (ConfigResult.objects.filter(Q(paddle_version=release) | Q(paddle_version="", run__paddle_version=release),
                                        run__torch="")
            .order_by("run_id").values_list(*ROW_COLUMNS))
    newest: dict[int, dict] = {}
    readings: dict[int, int] = {}  # config -> results with a float64 reading (each one draw read in one run)
    last_read: dict[int, dict] = {}  # config -> its newest result with readings
    for values in rows:
        row = dict(zip(ROW_COLUMNS, values))
        if row["run__lane"] == lane_of(row["task__kernel"]):
            newest[row["failing_config_id"]] = row
            readings[row["failing_config_id"]] = readings.get(row["failing_config_id"], 0) + bool(row["closer"])
            if row["closer"] or row["stable"] is not None:
                last_read[row["failing_config_id"]] = row
    for config_id, row in newest.items():
        row["readings"] = readings[config_id]
        # A later run without the readings (they are asked for, not routine) keeps the last ones taken on this
        # release: the same build and inputs, so who is closer has not changed; "reading_run" says where from.
        read = last_read.get(config_id)
        row["reading_run"] = read["run_id"] if read else None
        if read is not None and read is not row and row["exact"] is False:
            row.update({name: read[name] for name in READING_COLUMNS})
    return list(newest.values())


# The dULP histogram's bins: a config's largest distance in units in the last place between Paddle and Torch.
ULP_BINS = ("0", "1", "2-3", ">3")
NOT_MEASURED = "not_measured"


def ulp_bin(ulp: int) -> str:
    return "0" if ulp <= 0 else "1" if ulp == 1 else "2-3" if ulp <= 3 else ">3"


@dataclass
class AlignmentRow:
    api: str
    dtype: str
    tasks: list[int] = field(default_factory=list)
    configs: int = 0
    exact: int = 0
    within_tolerance: int = 0
    failing: int = 0
    median_ulp: float | None = None
    max_ulp: int | None = None
    closer: dict[str, int] = field(default_factory=lambda: {r.value: 0 for r in Reading})
    not_read: int = 0  # not exact, no float64 reading (the input bound, no floating output, an older verdict)
    nondeterministic: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in Side})
    paddle_rmse: float = 0.0  # sums over the readings with both RMSEs
    torch_rmse: float = 0.0
    rmse_ratio: float | None = None  # paddle_rmse / torch_rmse; None without a reading, inf when Torch's is 0
    advice: str = ""
    sentence: str = ""
    # the maintainer's decision (docs/board.md#the-alignment-decision): keep_paddle / align_torch / undecided, the
    # advice it follows from, and its evidence beside the counts above
    decision: str = ""
    decision_text: str = ""
    exact_share: float = 0.0          # exact / configs
    ulp_histogram: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ULP_BINS, 0))
    read_configs: int = 0             # inexact configs whose newest verdict has a float64 reading
    readings: int = 0                 # float64 readings of this row's configs over every run on the release
    thread_sensitivity: str = NOT_MEASURED  # does the verdict change with the thread count (no such axis yet)
    torch_sensitivity: str = NOT_MEASURED   # does it change with the Torch build (no such axis yet)
    rows: list[dict] = field(default_factory=list, repr=False)

    def as_dict(self, configs: bool = False) -> dict:
        data = asdict(self)
        data.pop("rows")
        if self.rmse_ratio is not None and self.rmse_ratio == float("inf"):
            data["rmse_ratio"] = "inf"
        if configs:
            data["config_rows"] = [config_dict(row) for row in self.rows]
        return data


def config_dict(row: dict) -> dict:
    return {"config": row["failing_config__config"], "task": row["task__number"], "rule": row["rule"],
            "status": row["status"], "exact": row["exact"], "max_ulp": row["max_ulp"], "stable": row["stable"],
            "nondeterministic": row["nondeterministic"], "closer": row["closer"] or None,
            "closer_code": row["closer_code"], "closer_output": row["closer_output"],
            "closer_skipped": row["closer_skipped"], "paddle_rmse": row["paddle_rmse"], "torch_rmse": row["torch_rmse"],
            "run": row["run_id"], "result": row["id"], "reading_run": row["reading_run"]}


SENTENCES = {
    Advice.FIX_NONDETERMINISM: lambda: _("Paddle is nondeterministic here: fix that first"),
    Advice.KEEP_PADDLE: lambda: _("Paddle is closer: keep Paddle's kernel, alignment behind a flag"),
    Advice.ALIGN_PADDLE: lambda: _("Torch is closer: align Paddle"),
    Advice.ALIGN_FOR_CONSISTENCY: lambda: _("equally close: align for consistency"),
    Advice.NOT_READ: lambda: _("not exact, and no float64 reading says who is closer yet"),
    Advice.EXACT: lambda: _("exact: nothing to align"),
}


def advice(row: AlignmentRow) -> Advice:
    """The row's sentence: Paddle's nondeterminism first; then the side the float64 oracle reads off more often
    (Torch off more often: Paddle is closer); equal counts with a reading: equally close."""
    if row.nondeterministic[Side.PADDLE] or row.nondeterministic[Side.BOTH]:
        return Advice.FIX_NONDETERMINISM
    if row.exact == row.configs:
        return Advice.EXACT
    paddle_off, torch_off = row.closer[Reading.PADDLE_OFF], row.closer[Reading.TORCH_OFF]
    if torch_off > paddle_off:
        return Advice.KEEP_PADDLE
    if paddle_off > torch_off:
        return Advice.ALIGN_PADDLE
    if row.closer[Reading.BOTH_OFF] or row.closer[Reading.WITHIN_ROUNDING]:
        return Advice.ALIGN_FOR_CONSISTENCY
    return Advice.NOT_READ


DECISIONS = {
    # advice -> decision: Paddle closer or already exact keeps its kernel; Torch closer, or both as close (align for
    # consistency: no accuracy lost), aligns to Torch; nondeterminism first, or no reading yet, decides nothing.
    Advice.KEEP_PADDLE: Decision.KEEP_PADDLE, Advice.EXACT: Decision.KEEP_PADDLE,
    Advice.ALIGN_PADDLE: Decision.ALIGN_TORCH, Advice.ALIGN_FOR_CONSISTENCY: Decision.ALIGN_TORCH,
    Advice.FIX_NONDETERMINISM: Decision.UNDECIDED, Advice.NOT_READ: Decision.UNDECIDED,
}
DECISION_TEXTS = {
    Decision.KEEP_PADDLE: lambda: _("keep Paddle's kernel"),
    Decision.ALIGN_TORCH: lambda: _("align to Torch"),
    Decision.UNDECIDED: lambda: _("undecided"),
}


def _add(group: AlignmentRow, row: dict) -> None:
    group.configs += 1
    group.readings += row.get("readings", 0)
    if row["max_ulp"] is not None:
        group.ulp_histogram[ulp_bin(row["max_ulp"])] += 1
    group.rows.append(row)
    if row["task__number"] not in group.tasks:
        group.tasks.append(row["task__number"])
    rule = row["rule"]
    group.exact += rule == Rule.EXACT
    group.within_tolerance += rule == Rule.WITHIN_TOLERANCE
    group.failing += rule == Rule.FAILS
    if row["exact"] is False:
        if row["closer"]:
            group.closer[row["closer"]] = group.closer.get(row["closer"], 0) + 1
            group.read_configs += 1
        else:
            group.not_read += 1
        if row["nondeterministic"]:
            group.nondeterministic[row["nondeterministic"]] = group.nondeterministic.get(row["nondeterministic"], 0) + 1
        if row["paddle_rmse"] is not None and row["torch_rmse"] is not None:
            group.paddle_rmse += row["paddle_rmse"]
            group.torch_rmse += row["torch_rmse"]
            group.rmse_ratio = 0.0  # a reading exists; the ratio is set once all are summed


def _finish(group: AlignmentRow) -> AlignmentRow:
    ulps = [row["max_ulp"] for row in group.rows if row["max_ulp"] is not None]
    if ulps:
        group.median_ulp, group.max_ulp = statistics.median(ulps), max(ulps)
    if group.rmse_ratio is not None:
        group.rmse_ratio = (group.paddle_rmse / group.torch_rmse if group.torch_rmse
                            else (float("inf") if group.paddle_rmse else 1.0))
    group.advice = advice(group).value
    group.sentence = SENTENCES[Advice(group.advice)]()
    group.decision = DECISIONS[Advice(group.advice)].value
    group.decision_text = DECISION_TEXTS[Decision(group.decision)]()
    group.exact_share = round(group.exact / group.configs, 4) if group.configs else 0.0
    group.rows.sort(key=lambda row: (-(row["max_ulp"] or 0), row["failing_config_id"]))
    return group


SORTS = {
    "api": lambda r: (r.api, r.dtype), "dtype": lambda r: (r.dtype, r.api), "configs": lambda r: r.configs,
    "exact": lambda r: r.exact, "within_tolerance": lambda r: r.within_tolerance, "failing": lambda r: r.failing,
    "median_ulp": lambda r: r.median_ulp or 0, "max_ulp": lambda r: r.max_ulp or 0,
    "paddle_off": lambda r: r.closer[Reading.PADDLE_OFF], "torch_off": lambda r: r.closer[Reading.TORCH_OFF],
    "rmse_ratio": lambda r: -1 if r.rmse_ratio is None else r.rmse_ratio, "advice": lambda r: r.advice,
    "decision": lambda r: r.decision, "exact_share": lambda r: r.exact_share, "read_configs": lambda r: r.read_configs,
}


def alignment_table(release: str, sort: str = "api", api: str = "", dtype: str = "") -> list[AlignmentRow]:
    """One row per API × dtype of the newest verdicts on ``release`` with an exact reading, sorted by ``sort``
    (a SORTS key, "-" first for descending; ties by API and dtype); only ``api`` / ``dtype`` when given."""
    groups: dict[tuple[str, str], AlignmentRow] = {}
    for row in newest_results(release):
        row["rule"] = rule_of(row["strict_status"] or row["status"], row["exact"])
        if row["rule"] is None:
            continue
        key = (api_name(row["failing_config__config"]), config_dtype(row["failing_config__config"]))
        if (api and key[0] != api) or (dtype and key[1] != dtype):
            continue
        _add(groups.setdefault(key, AlignmentRow(*key)), row)
    rows = sorted((_finish(g) for g in groups.values()), key=SORTS["api"])
    key = SORTS[sort.lstrip("-")]
    return sorted(rows, key=key, reverse=sort.startswith("-"))


def alignment_totals(rows: list[AlignmentRow]) -> dict:
    return {"configs": sum(r.configs for r in rows), "exact": sum(r.exact for r in rows),
            "within_tolerance": sum(r.within_tolerance for r in rows), "failing": sum(r.failing for r in rows),
            "advice": {a.value: sum(1 for r in rows if r.advice == a) for a in Advice},
            "decision": {d.value: sum(1 for r in rows if r.decision == d) for d in Decision}}
