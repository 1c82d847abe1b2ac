"""The task card: what is wrong, who is off, the smallest repro, where it stands and what to do next, in plain
words (issue 37) — the top of the task page and `summary` in /api/tasks/<n>.

Nothing here is a new reading: the card composes the selectors that feed the rest of the page — the newest
verdicts (selectors.runs), the per-release answer (selectors.releases: release_grids / release_answers through
task_releases_panel), the diagnoses (selectors.diagnoses), PaddleAPITest's reported diffs (selectors.reported)
and a GPU task's CPU evidence (selectors.cpu_evidence) — and says them in one sentence each. A GPU task without
a GPU run gets what the report logged and its CPU evidence, never a GPU verdict.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from django.utils.translation import gettext as _

from apitester.builds import version_key
from apitester.vocab import Reading

from ..github.pr_titles import DEFAULT_PREFIX
from ..models import ConfigResult, Task, TaskStatus
from ..vocab import BY_DESIGN, FAILING, TORCH_SUSPECT, FixedInKind, Kernel, Status, VerificationKind
from . import cpu_evidence as cpu_evidence_selectors
from . import diagnoses as diagnosis_selectors
from . import releases as release_selectors
from . import reported as reported_selectors
from . import runs as run_selectors

# The engine's verdict message names the values at the worst element (apitester.engine.compare.describe):
#  " ACTUAL (paddle): np.float16(19.16)" / " DESIRED (torch): np.float16(10.44)".
_ACTUAL = re.compile(r"ACTUAL \(paddle\): (?P<value>.+)")
_DESIRED = re.compile(r"DESIRED \(torch\): (?P<value>.+)")
_NUMPY_SCALAR = re.compile(r"^np\.(?P<dtype>\w+)\((?P<value>.*)\)$")


def config_command(config: str, draw: str = "") -> str:
    """The one command that re-runs a config with the engine (PaddleAPITest's flags), with the input draw the
    verdict came from when it is not the typical one: the page's repro commands and the card's confirm step."""
    command = "python -m apitester --accuracy=True --api_config='" + config.replace("'", "'\\''") + "'"
    return command + (f" --draw {draw}" if draw else "")


def number(value) -> str:
    """A difference or a value as a person reads it: 4 significant digits, inf / nan spelled out."""
    if value is None:
        return "?"
    if isinstance(value, str):
        return value
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.4g}"


def _scalar(text: str) -> tuple[str, str]:
    """("float16", "19.16") from the engine's "np.float16(19.16)"; ("", text) for any other repr."""
    match = _NUMPY_SCALAR.match(text.strip())
    if not match:
        return "", text.strip()
    try:
        return match["dtype"], number(float(match["value"]))
    except ValueError:
        return match["dtype"], match["value"]


def worst_element(result: ConfigResult) -> dict | None:
    """Paddle's and Torch's value at the verdict's worst element (read from its message), or None."""
    actual, desired = _ACTUAL.search(result.message or ""), _DESIRED.search(result.message or "")
    if not (actual and desired):
        return None
    dtype, paddle = _scalar(actual["value"])
    torch_dtype, torch = _scalar(desired["value"])
    return {"dtype": dtype or torch_dtype, "paddle": paddle, "torch": torch, "index": result.worst_index,
            "elements": result.total_elements, "max_abs": result.max_abs, "max_rel": result.max_rel}


@dataclass
class TaskSummary:
    number: int
    api: str
    kernel: str
    diff: str  # the diff in one sentence
    diff_source: str  # "verdict" | "reported" | "none": whose numbers the sentence gives
    worst: dict | None  # the verdict's worst element (dtype, paddle, torch, index, elements, max abs/rel)
    off: str  # a Reading ("paddle_off", …), or "not_diagnosed" / "nothing_to_diagnose" / "not_diagnosable"
    off_text: str
    off_describes: str | None  # "reported" | "repro": the config the diagnosis' reading describes (None: none)
    can_diagnose: bool  # failing configs none of which is diagnosed yet: the staff button
    repro_config: str  # the smallest failing config (the diagnosis's shrunk one, else the verdict's or the task's)
    repro_command: str
    repro_script: str  # the diagnosis's self-contained script, "" without one
    repro_source: str  # "diagnosis" | "verdict" | "cpu_evidence" | "config" | ""
    standing: str  # a FixedInKind, or "by_design" / a VerificationKind / "gpu_untested"
    standing_text: str
    claimable: bool
    claimants: list[str] = field(default_factory=list)
    pr_title: str = ""
    confirm_command: str = ""
    next_steps: list[dict] = field(default_factory=list)  # [{"kind", "text", "code"}]: claim, pr_title, confirm

    @property
    def text(self) -> str:
        parts = [self.diff, _("Who is off: %(off)s.") % {"off": self.off_text}]
        if self.repro_command:
            parts.append(_("Smallest repro: %(command)s") % {"command": self.repro_command})
        parts.append(_("Where it stands: %(standing)s.") % {"standing": self.standing_text})
        steps = " ".join(step["text"] + (" " + step["code"] if step["code"] else "") for step in self.next_steps)
        parts.append(_("Next: %(steps)s") % {"steps": steps})
        return "\n".join(parts)

    def as_dict(self) -> dict:
        return {**asdict(self), "text": self.text}


def task_summary(task: Task, *, releases_panel: dict | None = None, diagnosis=None, cpu_evidence=None,
                 verification=None, latest: run_selectors.TaskLatest | None = None) -> TaskSummary:
    """The card of one task (from `board.task_detail`). The page and the API pass the panels they already read
    (the same selectors' values, `latest` the task's newest verdicts); whatever is not passed is read here."""
    latest = latest or run_selectors.task_latest(task)
    releases_panel = releases_panel or release_selectors.task_releases_panel(task)
    diagnosis = diagnosis or diagnosis_selectors.task_diagnosis(task, latest.cpu)
    if cpu_evidence is None and task.kernel == Kernel.GPU:
        cpu_evidence = cpu_evidence_selectors.task_cpu_evidence(task, latest.cpu)
    verification = verification or run_selectors.task_verification(task, latest=latest.own)
    representative = diagnosis.distinct[0].representative if diagnosis.distinct else None
    result = _described_result(task, representative, releases_panel["rows"], latest.own)
    diff, source, worst = _diff_sentence(task, result, representative, cpu_evidence)
    off, off_text, can_diagnose = _who_is_off(task, diagnosis, cpu_evidence)
    repro_config, repro_command, repro_script, repro_source = _repro(task, result, representative, cpu_evidence)
    standing, standing_text = _standing(task, releases_panel["answer"], verification)
    summary = TaskSummary(
        number=task.number, api=task.api, kernel=task.kernel, diff=diff, diff_source=source, worst=worst,
        off=off, off_text=off_text, can_diagnose=can_diagnose, repro_config=repro_config,
        off_describes=diagnosis_selectors.reading_describes(representative.data) if representative else None,
        repro_command=repro_command, repro_script=repro_script, repro_source=repro_source,
        standing=standing, standing_text=standing_text, claimable=_claimable(task),
        claimants=[claim.contributor.login for claim in getattr(task, "active_claims", [])],
        pr_title=f"[{DEFAULT_PREFIX} No.{task.number}] …",
        confirm_command=config_command(_original_config(result, representative) or repro_config) if repro_config else "")
    summary.next_steps = _next_steps(task, summary)
    return summary


# ----------------------------------------------------------------------------- the parts


def _described_result(task: Task, representative, grid_rows, latest_own: dict) -> ConfigResult | None:
    """The verdict the card describes: the diagnosed representative's; else the task's newest verdicts in its own
    lane on the main environment — a failing one with the fewest elements; else the newest failing cell of the
    per-release grid (a fixed task: what failed before the fix); else a documented difference or a Torch suspect."""
    if representative is not None and representative.result is not None:
        return representative.result
    latest = list(latest_own.values())
    failing = [r for r in latest if r.status in FAILING]
    if failing:
        return _smallest(failing)
    cells = [(version_key(release), cell.run_id, config.id) for config, row in grid_rows
             for release, cell in row.items() if cell.status in FAILING and not cell.inferred]
    if cells:
        _release, run_id, config_id = max(cells)
        return (ConfigResult.objects.select_related("run", "failing_config")
                .filter(run_id=run_id, failing_config_id=config_id).first())
    other = [r for r in latest if r.status in BY_DESIGN | TORCH_SUSPECT]
    return _smallest(other) if other else None


def _smallest(results: list[ConfigResult]) -> ConfigResult:
    return min(results, key=lambda r: (r.total_elements if r.total_elements is not None else 2**63, r.pk))


def _oracle_reading(representative) -> dict:
    """The float64 oracle's reading of the diagnosed failure's output ({} without one)."""
    if representative is None:
        return {}
    data = representative.data or {}
    return data.get("reading") if isinstance(data.get("reading"), dict) else {}


def _off_by(reading: dict) -> str:
    """"; Paddle is off a float64 reference by 8.72" from the oracle's reading, "" without one."""
    kind = reading.get("reading")
    paddle, torch = ((reading.get(side) or {}).get("max_abs") for side in ("paddle", "torch"))
    if kind in (Reading.PADDLE_OFF, Reading.TORCH_OFF) and (paddle if kind == Reading.PADDLE_OFF else torch) is None:
        # A side named without a distance to a float64 value (the float64 gradient check, a reference's verdict):
        # say who and by what, not "by None".
        source = reading.get("oracle") or "float64"
        who = _("Paddle") if kind == Reading.PADDLE_OFF else _("Torch")
        return _("; %(who)s is off (%(source)s: %(evidence)s)") % {
            "who": who, "source": str(source).replace("_", " "), "evidence": reading.get("evidence") or "—"}
    if kind == Reading.PADDLE_OFF:
        return _("; Paddle is off a float64 reference by %(x)s") % {"x": number(paddle)}
    if kind == Reading.TORCH_OFF:
        return _("; Torch is off a float64 reference by %(x)s (Paddle by %(y)s)") % {"x": number(torch), "y": number(paddle)}
    if kind == Reading.BOTH_OFF:
        return _("; both are off a float64 reference (Paddle by %(x)s, Torch by %(y)s)") % {
            "x": number(paddle), "y": number(torch)}
    if kind == Reading.WITHIN_ROUNDING:
        return _("; both are within rounding of a float64 reference")
    return ""


def _diff_sentence(task: Task, result, representative, cpu_evidence) -> tuple[str, str, dict | None]:
    if result is None:
        return _reported_sentence(task, cpu_evidence)
    worst = worst_element(result)
    off_by = _off_by(_oracle_reading(representative))
    if off_by and diagnosis_selectors.reading_describes(representative.data) == diagnosis_selectors.REPRO:
        off_by += _(" (%(label)s)") % {"label": diagnosis_selectors.repro_label()}  # not the verdict's config
    by_design = result.status in BY_DESIGN
    if worst:
        text = _("%(dtype)s %(api)s of %(n)s elements: the worst element is %(p)s in Paddle, %(t)s in Torch") % {
            "dtype": worst["dtype"], "api": task.api, "n": f"{worst['elements']:,}" if worst["elements"] else "?",
            "p": worst["paddle"], "t": worst["torch"]}
    else:
        text = _("%(api)s: %(what)s") % {"api": task.api, "what": _failure_words(result)}
    if by_design:
        text += _(" (a documented difference: Paddle does this by design)")
    release = result.paddle_version or result.run.paddle_version
    if release:
        text = _("On Paddle %(release)s, %(diff)s") % {"release": release, "diff": text}
    return _sentence(text + off_by), "verdict", worst


def _sentence(text: str) -> str:
    return _("%(sentence)s.") % {"sentence": text}


def _status_words(status: str) -> str:
    return {
        Status.ACCURACY_ERROR: _("its values differ from Torch's"),
        Status.DTYPE_MISMATCH: _("its output dtype differs from Torch's"),
        Status.SHAPE_MISMATCH: _("its output shape differs from Torch's"),
        Status.PADDLE_ERROR: _("Paddle raises an error where Torch gives a result"),
        Status.CRASH: _("Paddle's kernel crashed the worker process"),
        Status.FLAKY_CRASH: _("Paddle's kernel crashed the worker process once"),
        Status.TIMEOUT: _("Paddle's kernel hung the worker process (timeout)"),
        Status.DOCUMENTED_DIFFERENCE: _("it differs from the plain Torch call"),
        Status.TORCH_SUSPECT: _("it differs from Torch, and the engine suspects Torch"),
    }.get(status, status)


def _failure_words(result: ConfigResult) -> str:
    """A verdict without the worst element's values: its status in words, then its figures or its message."""
    words = _status_words(result.status)
    if result.mismatched is not None and result.total_elements:
        words += _(" (%(m)s of %(n)s elements)") % {"m": f"{result.mismatched:,}", "n": f"{result.total_elements:,}"}
    if result.max_abs is not None:
        return words + _(", max abs %(a)s, max rel %(r)s") % {"a": number(result.max_abs), "r": number(result.max_rel)}
    first_line = (result.message or "").strip().splitlines()[:1]
    return words + (": " + first_line[0][:200] if first_line else "")


def _reported_sentence(task: Task, cpu_evidence) -> tuple[str, str, None]:
    """No verdict of ours in the task's lane: what PaddleAPITest reported, and a GPU task's CPU evidence."""
    config_ids = list(task.failing_configs.order_by("id").values_list("id", flat=True)[:200])
    reported = reported_selectors.reported_by_config(config_ids)
    parts = []
    if reported:
        diff = reported[min(reported)][0]  # the task's first config with a reported diff, its newest report
        if diff.mismatched is not None and diff.max_abs is not None:
            what = _("%(m)s of %(n)s elements differ, max abs %(a)s, max rel %(r)s") % {
                "m": f"{diff.mismatched:,}", "n": f"{diff.total or 0:,}", "a": number(diff.max_abs),
                "r": number(diff.max_rel)}
        else:
            what = f"{diff.kind}: {diff.message[:160]}"
        parts.append(_("%(api)s: %(label)s: %(what)s (the report's evidence, not a verdict of this board)") % {
            "api": task.api, "label": diff.label, "what": what})
    if cpu_evidence is not None:
        lines = cpu_evidence.lines()
        parts.append(_("CPU lane: %(evidence)s") % {"evidence": "; ".join(lines)} if lines
                     else _("not re-tested on the CPU lane yet"))
        parts.append(_("no GPU verdict: this board has no GPU run for it"))
    if not parts:
        return _("%(api)s: not re-tested yet, and PaddleAPITest's reports logged no numbers for it.") % {
            "api": task.api}, "none", None
    return _sentence("; ".join(parts)), "reported" if reported else "none", None


def _who_is_off(task: Task, diagnosis, cpu_evidence) -> tuple[str, str, bool]:
    if diagnosis.distinct:
        first = diagnosis.distinct[0]
        text = first.reading_text
        if len(diagnosis.distinct) > 1:
            text = _("%(text)s (the commonest of %(n)s distinct failures)") % {"text": text, "n": len(diagnosis.distinct)}
        return first.representative.reading or Reading.NO_ORACLE, text, False
    if diagnosis.failing:
        return "not_diagnosed", _("not yet diagnosed"), True
    if task.kernel == Kernel.GPU and (cpu_evidence is None or not cpu_evidence.fails):
        return "not_diagnosable", _("not diagnosed: diagnoses run on the CPU lane, where this GPU task's configs "
                                    "do not fail (or are not re-tested yet)"), False
    return "nothing_to_diagnose", _("nothing to diagnose: no config fails strictly on the CPU lane"), False


def _repro(task: Task, result, representative, cpu_evidence) -> tuple[str, str, str, str]:
    """(config, command, script, source): the diagnosis's shrunk repro, else the described verdict's config and draw,
    else (a GPU task without a GPU verdict) a config that fails on the CPU lane too, else the task's first config."""
    if representative is not None and (representative.shrunk_config or representative.command):
        config = representative.shrunk_config or representative.failing_config.config
        return config, representative.command or config_command(config), representative.repro, "diagnosis"
    if result is not None:
        return result.failing_config.config, config_command(result.failing_config.config, result.draw), "", "verdict"
    if cpu_evidence is not None and cpu_evidence.failing_configs:
        config = cpu_evidence.failing_configs[0]
        return config, config_command(config), "", "cpu_evidence"
    first = task.failing_configs.order_by("id").values_list("config", flat=True).first()
    return (first, config_command(first), "", "config") if first else ("", "", "", "")


def _original_config(result, representative) -> str:
    if representative is not None:
        return representative.failing_config.config
    return result.failing_config.config if result is not None else ""


def _standing(task: Task, answer, verification) -> tuple[str, str]:
    if verification.kind == VerificationKind.BY_DESIGN or (
            answer.kind == FixedInKind.DIFFERS_ON_LATEST and verification.reasons):
        reasons = "; ".join(verification.reasons) or _("see the spec's adaptation")
        return "by_design", _("differs by design: %(reasons)s") % {"reasons": reasons}
    if answer.kind == FixedInKind.FIXED:
        after = [r for r in answer.releases if r not in answer.not_run
                 and version_key(r) >= version_key(answer.release)]
        return answer.kind, _("fixed in %(r)s — passes on every later release tested (%(after)s); fails on %(b)s") % {
            "r": answer.release, "after": ", ".join(after), "b": answer.before}
    if answer.kind == FixedInKind.NEVER:
        return answer.kind, _("failing on every release tested (%(rs)s)") % {
            "rs": ", ".join(r for r in answer.releases if r not in answer.not_run)}
    if answer.kind != FixedInKind.UNTESTED:
        return answer.kind, release_selectors.describe(answer)
    if task.kernel == Kernel.GPU:
        return "gpu_untested", _("no GPU verdict yet (it waits for a GPU worker); the card shows the report and the "
                                 "CPU evidence")
    return verification.kind, verification.text


def _claimable(task: Task) -> bool:
    return not task.locked and task.status == TaskStatus.OPEN


def _next_steps(task: Task, summary: TaskSummary) -> list[dict]:
    """What a contributor does next, each step a sentence and the text to paste ("" for none)."""
    steps = []
    if task.locked:
        steps.append(("locked", _("It is locked, not open for claiming: %(reason)s.") % {"reason": task.locked_reason}, ""))
    elif summary.claimable:
        steps.append(("claim", _("Claim it: the claim box on this page, or a comment on the tracking issue."), ""))
    elif summary.claimants:
        steps.append(("claimed", _("Claimed by %(who)s.") % {"who": ", ".join("@" + login for login in summary.claimants)},
                      ""))
    steps.append(("pr_title", _("Title the fix's pull request so the board links it:"), summary.pr_title))
    if summary.confirm_command:
        steps.append(("confirm", _("Confirm with one command (it passes once fixed):"), summary.confirm_command))
    return [{"kind": kind, "text": text, "code": code} for kind, text, code in steps]
