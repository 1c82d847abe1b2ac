"""What the diagnoses say (docs/diagnosis.md): per task, its distinct failures — the diagnosed configs
grouped by the engine's shrunk signature, one representative each — and who is off the float64 oracle.

The newest diagnosis of each config counts; a config diagnosed again replaces its older diagnosis.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from apitester.vocab import ConventionKind, Describes, Reading, ReadingSource, TieRule, kernel_not_registered

from ..models import Diagnosis, Task
from ..vocab import FAILING, RUNNER_FAILURES, Kernel, Lane
from .runs import latest_results

# What a diagnosis can explain: a value, dtype, shape or error failure of the strict layer. A crash or a
# timeout is the runner's verdict on a whole worker, not something the oracle or a shrink can reproduce
# in bounded time.
DIAGNOSABLE = FAILING - RUNNER_FAILURES


def diagnosable_results(task: Task, latest_cpu: dict | None = None) -> list:
    """The task's newest CPU verdicts that fail strictly: what services/diagnoses.py diagnoses and what the
    page counts as "failing configs" (diagnoses run on this host's main env, the CPU lane); `latest_cpu`: the
    cpu lane's latest_results when the caller read them already."""
    if latest_cpu is None:
        latest_cpu = latest_results(lane=Lane.CPU, task=task)
    found = [r for r in latest_cpu.values() if (r.strict_status or r.status) in DIAGNOSABLE]
    if task.kernel == Kernel.GPU:  # a GPU-only op or dtype has no CPU kernel: nothing about the GPU failure to shrink
        found = [r for r in found if not kernel_not_registered(r.status, r.message)]
    return found


def reading_text(reading: str, source: str | None = None) -> str:
    """The reading in words; a side named by the float64 gradient check (issue 34) says it is the gradient."""
    if source == ReadingSource.INPUT_SHAPE:  # issue 44: a gradient must have its input's shape
        return {
            Reading.PADDLE_OFF: _("Paddle's gradient does not have its input's shape; Torch's does"),
            Reading.TORCH_OFF: _("Torch's gradient does not have its input's shape; Paddle's does (Torch suspect)"),
            Reading.BOTH_OFF: _("neither side's gradient has its input's shape"),
        }.get(reading, reading or _("no reading"))
    if source == ReadingSource.GRADIENT_CHECK:
        return {
            Reading.PADDLE_OFF: _("Paddle's gradient misses the derivative; Torch's matches it (float64 gradient check)"),
            Reading.TORCH_OFF: _("Torch's gradient misses the derivative; Paddle's matches it "
                                 "(float64 gradient check; Torch suspect)"),
        }.get(reading, reading or _("no reading"))
    return {
        Reading.PADDLE_OFF: _("Paddle is off the float64 value; Torch is close to it"),
        Reading.TORCH_OFF: _("Torch is off the float64 value; Paddle is close to it (Torch suspect)"),
        Reading.BOTH_OFF: _("both are off the float64 value"),
        Reading.WITHIN_ROUNDING: _("both are within rounding of the float64 value"),
        Reading.NO_ORACLE: _("no float64 oracle"),
        Reading.CONVENTION: _("a convention, not a value error"),
    }.get(reading, reading or _("no reading"))


# Which config a diagnosis' final reading describes (apitester.diagnosis.diagnose: ``reading.describes``, issue 44).
REPORTED, REPRO = Describes.REPORTED.value, Describes.REPRO.value


def reading_describes(data: dict | None) -> str | None:
    """"reported" or "repro": the config the diagnosis' reading describes (None: no reading).  A diagnosis stored
    before the engine said so describes its shrunk repro unless nothing shrank or it was read on the reported
    config (``read_on``)."""
    data = data or {}
    reading = data.get("reading") if isinstance(data.get("reading"), dict) else {}
    if not reading:
        return None
    if reading.get("describes") in (REPORTED, REPRO):
        return reading["describes"]
    shrink = data.get("shrink") if isinstance(data.get("shrink"), dict) else {}
    shrunk = shrink.get("config", data.get("config")) != data.get("config") or shrink.get("final_draw") not in (
        None, shrink.get("draw"))
    return REPORTED if reading.get("read_on") == REPORTED or not shrunk else REPRO


def repro_label() -> str:
    return _("read on the shrunk repro, not the reported config")


def tie_rule_text(rule: str) -> str:
    return {
        TieRule.HALF_TO_EVEN: _("half to even"), TieRule.HALF_AWAY_FROM_ZERO: _("half away from zero"),
        TieRule.HALF_UP: _("half up"), TieRule.HALF_DOWN: _("half down"), TieRule.MIXED: _("no single rule"),
    }.get(rule, rule)


def _gradient_part_text(engine_text: str) -> str:
    """apitester.diagnosis.reference_gradients.gradient_convention_reading's words for one side (the only part the engine names
    today is the Hermitian part of eigh / eigvalsh / pinv(hermitian=True))."""
    return {"the Hermitian part only": _("the Hermitian part only"),
            "more than the Hermitian part": _("more than the Hermitian part")}.get(engine_text, engine_text)


def _subgradient_text(engine_text: str) -> str:
    """apitester.diagnosis.diagnose.subgradient_choice's words for one side."""
    return {"the left derivative": _("the left derivative"), "the right derivative": _("the right derivative"),
            "the mean of the one-sided derivatives": _("the mean of the one-sided derivatives"),
            "another value between them": _("another value between them"), "a subgradient": _("a subgradient"),
            "another subgradient": _("another subgradient")}.get(engine_text, engine_text)


def convention_shown(convention: dict | None) -> dict | None:
    """A convention reading (apitester.diagnosis.conventions) for the page: its kind's name, both behaviours and the
    sentence naming them, in the page's language (dtypes, shapes and error messages stay as the engine wrote them)."""
    if not convention:
        return None
    kind = convention.get("kind")
    paddle, torch = str(convention.get("paddle", "")), str(convention.get("torch", ""))
    if kind == ConventionKind.TIE:
        paddle, torch = tie_rule_text(convention.get("paddle_rule", "")), tie_rule_text(convention.get("torch_rule", ""))
        text = _("ties: Paddle rounds %(paddle)s, Torch %(torch)s (%(n)s tied elements)") % {
            "paddle": paddle, "torch": torch, "n": convention.get("ties", "?")}
    elif kind == ConventionKind.RAISES:
        error = convention.get("error", "")
        if convention.get("raises") == "torch":
            paddle, torch = _("returns"), _("raises %(error)s") % {"error": error}
            text = _("Torch raises %(error)s where Paddle returns") % {"error": error}
        else:
            paddle, torch = _("raises %(error)s") % {"error": error}, _("returns")
            text = _("Paddle raises %(error)s where Torch returns") % {"error": error}
    elif kind == ConventionKind.DTYPE:
        text = _("dtype: %(paddle)s (Paddle) vs %(torch)s (Torch)") % {"paddle": paddle, "torch": torch}
    elif kind == ConventionKind.SUBGRADIENT:
        paddle, torch = _subgradient_text(paddle), _subgradient_text(torch)
        text = _("at %(n)s kinks (a tie, a clamp bound) both gradients lie between the one-sided derivatives: "
                 "Paddle gives %(paddle)s, Torch %(torch)s") % {"n": convention.get("kinks", "?"), "paddle": paddle,
                                                               "torch": torch}
    elif kind == ConventionKind.UNDEFINED:
        text = _("undefined outside the domain (the forward is not finite at and around %(n)s elements, so no "
                 "derivative exists): Paddle gives %(paddle)s, Torch %(torch)s") % {
            "n": convention.get("elements", "?"), "paddle": paddle, "torch": torch}
    elif kind == ConventionKind.PARAMETER:
        rounds = "Paddle" if convention.get("rounds") == "paddle" else "Torch"
        text = _("parameter rounded to float32: %(side)s computes %(params)s at float32, the other side at "
                 "float64 (the rounding moves a kink or bound)") % {"side": rounds,
                                                                   "params": convention.get("parameters", "?")}
    elif kind == ConventionKind.GRADIENT:
        paddle, torch = _gradient_part_text(paddle), _gradient_part_text(torch)
        text = _("gradients equal on their Hermitian part; outside it Paddle returns %(paddle)s, Torch "
                 "%(torch)s") % {"paddle": paddle, "torch": torch}
    else:
        text = _("shape: %(paddle)s (Paddle) vs %(torch)s (Torch)") % {"paddle": paddle, "torch": torch}
    kinds = {ConventionKind.DTYPE: _("dtype"), ConventionKind.SHAPE: _("shape"),
             ConventionKind.RAISES: _("raises"), ConventionKind.TIE: _("rounding ties"),
             ConventionKind.GRADIENT: _("gradient convention"), ConventionKind.SUBGRADIENT: _("subgradient at a kink"),
             ConventionKind.UNDEFINED: _("no derivative outside the domain"),
             ConventionKind.PARAMETER: _("parameter rounded to float32")}
    return {"kind": kind, "kind_text": kinds.get(kind, kind), "paddle": paddle, "torch": torch, "text": text,
            "key": convention.get("key", "")}


@dataclass(frozen=True)
class DistinctFailure:
    """Diagnosed configs with one shrunk signature: one bug, shown by its smallest representative."""

    signature: str
    representative: Diagnosis
    configs: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.configs)

    @property
    def reading(self) -> dict:
        """The engine's reading of the failing output (the diagnosis JSON's ``reading``), {} when not loaded."""
        data = self.representative.__dict__.get("data")  # deferred in counts: never a query per row here
        return (data or {}).get("reading") or {}

    @property
    def reading_source(self) -> str | None:
        """What named the side: the float64 oracle or the float64 gradient check (None: no side reading)."""
        reading = self.representative.reading
        if not reading or reading in (Reading.NO_ORACLE, Reading.CONVENTION):
            return None
        return self.reading.get("oracle") or ReadingSource.FLOAT64_ORACLE.value

    @property
    def reading_source_text(self) -> str:
        return {ReadingSource.GRADIENT_CHECK: _("float64 gradient check"),
                ReadingSource.INPUT_SHAPE: _("the gradient's shape against its input's"),
                ReadingSource.FLOAT64_ORACLE: _("float64 oracle")}.get(self.reading_source, self.reading_source or "")

    @property
    def reading_evidence(self) -> str:
        return str(self.reading.get("evidence") or "")

    @property
    def describes(self) -> str | None:
        """"reported" / "repro": whose reading is shown (None when the JSON is not loaded or has no reading)."""
        return reading_describes(self.representative.__dict__.get("data"))

    @property
    def describes_why(self) -> str:
        return str(self.reading.get("describes_why") or "")

    @property
    def shrunk(self) -> bool:
        """The repro differs from the reported config: the per-output oracle readings (``oracle``) are the repro's."""
        d = self.representative
        return bool(d.shrunk_config) and d.shrunk_config != d.failing_config.config

    @property
    def reported_errors(self) -> dict | None:
        """The final reading's errors where it describes the reported config of a shrunk failure (shown beside the
        repro's per-output readings), else None."""
        reading = self.reading
        if self.describes != REPORTED or not self.shrunk or not isinstance(reading.get("paddle"), dict):
            return None
        return reading

    @property
    def repro_reading(self) -> str | None:
        """The shrunk repro's reading where it differs from the reported config's (shown beside it), else None."""
        repro = (self.reading.get("evidence_readings") or {}).get("repro") or {}
        other = repro.get("reading") if self.describes == REPORTED else None
        return other if other and other != self.reading.get("reading") else None

    @property
    def convention(self) -> dict | None:
        """The representative's convention (its failing output read ``convention``), shown; else None."""
        reading = self.reading
        return convention_shown(reading.get("convention")) if reading.get("reading") == Reading.CONVENTION else None

    @property
    def reading_text(self) -> str:
        convention = self.convention
        if convention is not None:
            text = f"{reading_text(Reading.CONVENTION)}: {convention['text']}"
        else:
            text = reading_text(self.representative.reading, self.reading_source)
        if self.describes == REPRO:  # never shown as the reported config's (issue 44)
            text = _("%(reading)s (%(label)s)") % {"reading": text, "label": repro_label()}
        return text

    def as_dict(self) -> dict:
        d = self.representative
        return {"signature": self.signature, "configs": self.count, "reading": d.reading,
                "reading_source": self.reading_source, "reading_text": self.reading_text,
                "reading_evidence": self.reading_evidence or None,
                "reading_describes": self.describes, "reading_describes_why": self.describes_why or None,
                "repro_reading": self.repro_reading,
                "status": d.status, "direction": d.direction or None, "config": d.failing_config.config,
                "shrunk_config": d.shrunk_config, "elements_before": d.elements_before,
                "elements_after": d.elements_after, "trials": d.trials, "seconds": d.seconds,
                "draw": (d.result.draw or "typical:0") if d.result else None, "repro": d.repro,
                "command": d.command, "paddle_version": d.paddle_version, "oracle": d.data.get("oracle"),
                "gradient_check": d.data.get("gradient_check"), "reading_text": self.reading_text,
                "convention": self.convention}


@dataclass(frozen=True)
class TaskDiagnosis:
    failing: int  # the task's configs whose newest CPU verdict fails strictly (what can be diagnosed)
    diagnosed: int
    distinct: list[DistinctFailure] = field(default_factory=list)
    errors: list[Diagnosis] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"failing_configs": self.failing, "diagnosed": self.diagnosed,
                "distinct_failures": [f.as_dict() for f in self.distinct],
                "not_diagnosed": [{"config": d.failing_config.config, "message": d.message} for d in self.errors]}


def latest_diagnoses(task_ids=None) -> list[Diagnosis]:
    """The newest diagnosis of each config (of these tasks)."""
    rows = Diagnosis.objects.select_related("failing_config", "result").defer("data").order_by("failing_config_id", "-pk")
    if task_ids is not None:
        rows = rows.filter(task_id__in=list(task_ids))
    newest: dict[int, Diagnosis] = {}
    for row in rows:
        newest.setdefault(row.failing_config_id, row)
    return list(newest.values())


def _distinct(diagnoses: list[Diagnosis]) -> list[DistinctFailure]:
    groups: dict[str, list[Diagnosis]] = defaultdict(list)
    for d in diagnoses:
        if d.state == Diagnosis.State.DONE:
            groups[d.signature].append(d)
    failures = []
    for signature, members in groups.items():
        members.sort(key=lambda d: (d.elements_after if d.elements_after is not None else 2**63, d.pk))
        failures.append(DistinctFailure(signature, members[0], tuple(d.failing_config.config for d in members)))
    return sorted(failures, key=lambda f: (-f.count, f.signature))


def task_diagnosis(task: Task, latest_cpu: dict | None = None) -> TaskDiagnosis:
    diagnoses = latest_diagnoses([task.pk])
    if diagnoses:  # the representative's full JSON (oracle numbers, gradient check) is shown
        with_data = {d.pk: d.data for d in Diagnosis.objects.filter(pk__in=[d.pk for d in diagnoses]).only("data")}
        for d in diagnoses:
            d.data = with_data.get(d.pk) or {}
    return TaskDiagnosis(failing=len(diagnosable_results(task, latest_cpu)), diagnosed=len(diagnoses), distinct=_distinct(diagnoses),
                         errors=[d for d in diagnoses if d.state == Diagnosis.State.ERROR])


def distinct_failure_counts() -> dict[int, int]:
    """task id -> its number of distinct failures (the board's column; the task page counts the same)."""
    by_task: dict[int, list[Diagnosis]] = defaultdict(list)
    for d in latest_diagnoses():
        by_task[d.task_id].append(d)
    counts = {task_id: len(_distinct(rows)) for task_id, rows in by_task.items()}
    return {task_id: n for task_id, n in counts.items() if n}
